"""The sign-in throttle: password guessing is counted per account and per address, in the counters
every worker shares (portal.api.limits), and a guess past a limit is not even checked.

Three counters, each of sign-in attempts that did not succeed (an attempt is counted before the
password is checked, so two workers cannot both let a guess past a limit, and given back when it
succeeds):
- this account from this address (LOGIN_RATE_LIMIT, 5 per 15 minutes): a guesser is stopped
  quickly, and nobody else is;
- this account from anywhere (LOGIN_ACCOUNT_LIMIT, 20 per hour): guesses spread over many
  addresses still stop;
- this address for any account (LOGIN_ADDRESS_LIMIT, 100 per hour): one address trying many
  accounts stops, while the people behind the same address (an office, a mobile network) keep
  signing in to their own accounts unless a guesser there fails a hundred times.
A browser that signed in to the account before carries a device cookie (signed, 180 days): its
attempts are counted against that cookie alone, 5 per 15 minutes, so a guesser elsewhere (behind
the same address, or spraying the account from many) does not lock its owner out of their own
browsers (OWASP's device cookies). IPv6 addresses count by their /64. Keys are keyed digests: the
counters hold no e-mail address and no IP address.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time

from flask import Flask, current_app
from itsdangerous import BadData, URLSafeTimedSerializer
from limits import RateLimitItem, parse
from limits.strategies import FixedWindowRateLimiter

from portal.api.limits import client_network

DEFAULTS = {
    "LOGIN_RATE_LIMIT": "5 per 15 minutes",
    "LOGIN_ACCOUNT_LIMIT": "20 per hour",
    "LOGIN_ADDRESS_LIMIT": "100 per hour",
}


DEVICE_COOKIE = "portal_device"
DEVICE_DAYS = 180


class SignInThrottle:
    def __init__(self, app: Flask) -> None:
        self.limiter = FixedWindowRateLimiter(app.extensions["portal_limiter"].storage)
        self.secret = str(app.config["SECRET_KEY"]).encode()
        self.limits = {name: parse(str(app.config.get(name) or default)) for name, default in DEFAULTS.items()}
        self.devices = URLSafeTimedSerializer(str(app.config["SECRET_KEY"]), salt="signin-device")

    def _counters(self, email: str, address: str | None, device: str | None) -> list[tuple[RateLimitItem, tuple[str, ...]]]:
        who = self._digest("account", email.strip().lower())
        known = self._device(device, who)
        if known is not None:
            # A browser that signed in to this account before: its own allowance, untouched by
            # guessers elsewhere (the account's and the address's counters do not apply to it).
            return [(self.limits["LOGIN_RATE_LIMIT"], ("signin-device", known))]
        where = self._digest("address", client_network(address))
        return [
            (self.limits["LOGIN_RATE_LIMIT"], ("signin-pair", who, where)),
            (self.limits["LOGIN_ADDRESS_LIMIT"], ("signin-address", where)),
            (self.limits["LOGIN_ACCOUNT_LIMIT"], ("signin-account", who)),
        ]

    def _digest(self, kind: str, value: str) -> str:
        return hmac.new(self.secret, f"{kind}:{value}".encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]

    def _device(self, token: str | None, who: str) -> str | None:
        """The id of a device cookie this account's sign-in gave this browser, if it is one."""
        if not token:
            return None
        try:
            data = self.devices.loads(token, max_age=DEVICE_DAYS * 86400)
        except BadData:
            return None
        if not isinstance(data, dict) or data.get("a") != who or not isinstance(data.get("d"), str):
            return None
        return str(data["d"])

    def attempt(self, email: str, address: str | None, device: str | None = None) -> int | None:
        """Count a sign-in attempt; None when it may be checked, else the seconds until it may.

        The address's counter is only looked at first (a refused address adds no counters), then
        the counters are taken in order and the first one over stops the count: guesses refused at
        this address do not eat the account's allowance for everywhere else (which would let a
        guesser lock the account's owner out from their own address)."""
        counters = self._counters(email, address, device)
        if len(counters) == 3:
            address_limit, address_ids = counters[1]
            if not self.limiter.test(address_limit, *address_ids):
                return self._wait(address_limit, address_ids)
        for item, ids in counters:
            if not self.limiter.hit(item, *ids):
                return self._wait(item, ids)
        return None

    def _wait(self, item: RateLimitItem, ids: tuple[str, ...]) -> int:
        reset = self.limiter.get_window_stats(item, *ids).reset_time
        return max(1, math.ceil(reset - time.time()))

    def succeeded(self, email: str, address: str | None, device: str | None = None) -> str:
        """The attempt signed in: it was no guess and counts no more. Answers the device cookie to
        give the browser, which lets it past the account's and the address's limits from now on."""
        for item, ids in self._counters(email, address, device):
            self.limiter.hit(item, *ids, cost=-1)
        who = self._digest("account", email.strip().lower())
        return str(self.devices.dumps({"a": who, "d": secrets.token_hex(8)}))


def throttle() -> SignInThrottle:
    found: SignInThrottle = current_app.extensions["signin_throttle"]
    return found


def init_throttle(app: Flask) -> None:
    app.extensions["signin_throttle"] = SignInThrottle(app)
