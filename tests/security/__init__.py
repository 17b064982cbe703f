"""Attack tests for the privacy promises: what is erased stays unreadable everywhere."""
