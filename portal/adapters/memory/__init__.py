"""The in-memory reference store: what every other store must behave like."""
