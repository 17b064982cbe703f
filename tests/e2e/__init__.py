"""Browser tests: Playwright and a real Chromium against a live portal."""
