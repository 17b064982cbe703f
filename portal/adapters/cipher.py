"""Encryption at rest of memory text: the `Cipher` protocol and its Fernet implementation.

Keys come from MEMORY_ENCRYPTION_KEYS, comma-separated Fernet keys. The first key encrypts; every
key decrypts, so a new key is rolled out by putting it first, re-encrypting stored text with
`rotate`, then dropping the old key. `check_cipher` runs at start-up and refuses a cipher that
would store text readable (an encrypt that returns its input), so a misconfiguration cannot pass
for encryption.
"""

from __future__ import annotations

import base64
from typing import Protocol, runtime_checkable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ENV_VAR = "MEMORY_ENCRYPTION_KEYS"
# Fixed label so the digest key is bound to its single use; changing it changes every keyed hash.
_DIGEST_LABEL = b"memory-portal text digest v1"
_PROBE = "probe text"


class CipherError(Exception):
    """A token could not be decrypted with any configured key (wrong key, or tampered with)."""


@runtime_checkable
class Cipher(Protocol):
    """Reversible encryption of text, plus a secret for keyed hashes of the same text.

    `digest_key` lets the store keep a duplicate-detection hash (HMAC) without keeping a plain hash
    of the text, which could be confirmed by guessing.
    """

    digest_key: bytes

    def encrypt(self, text: str) -> str: ...

    def decrypt(self, token: str) -> str: ...


class FernetCipher:
    """MultiFernet over one or more keys: the first encrypts, all decrypt.

    `digest_key` derives from the first key, so rotating to a new primary key changes it: keyed
    hashes of stored text must be recomputed along with `rotate`.
    """

    def __init__(self, keys: list[str]):
        if isinstance(keys, str):
            raise TypeError("keys is a list of Fernet keys; use FernetCipher.from_env_value for a string")
        if not keys:
            raise ValueError(f"{ENV_VAR} holds no key")
        fernets = []
        for position, key in enumerate(keys, start=1):
            try:
                fernets.append(Fernet(_canonical_key(key)))
            except (ValueError, TypeError, AttributeError):
                # Position only: the key itself never goes into a message or a log.
                raise ValueError(
                    f"{ENV_VAR}: key {position} of {len(keys)} is not a Fernet key "
                    "(32 url-safe base64-encoded bytes; make one with `generate_key`)"
                ) from None
        self._fernet = MultiFernet(fernets)
        self._first = fernets[0]
        self.key_count = len(fernets)
        self.digest_key = _derive_digest_key(base64.urlsafe_b64decode(_canonical_key(keys[0])))

    @classmethod
    def from_env_value(cls, value: str) -> FernetCipher:
        """The cipher described by MEMORY_ENCRYPTION_KEYS ("newest,older,..."); ValueError names it."""
        keys = [part.strip() for part in (value or "").split(",") if part.strip()]
        if not keys:
            raise ValueError(f"{ENV_VAR} is empty; it takes comma-separated Fernet keys")
        return cls(keys)

    @staticmethod
    def generate_key() -> str:
        """A fresh Fernet key, as text for MEMORY_ENCRYPTION_KEYS."""
        return Fernet.generate_key().decode("ascii")

    def __repr__(self) -> str:
        return f"FernetCipher(<{self.key_count} key(s)>)"

    def encrypt(self, text: str) -> str:
        return self._fernet.encrypt(text.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeEncodeError):
            raise CipherError("cannot decrypt: no configured key matches, or the token was altered") from None

    def uses_first_key(self, token: str) -> bool:
        """Whether the first key alone reads this token, i.e. `rotate` would have nothing to do."""
        try:
            self._first.decrypt(token.encode("ascii"))
        except (InvalidToken, UnicodeEncodeError):
            return False
        return True

    def rotate(self, token: str) -> str:
        """The same text re-encrypted with the first key (decrypting with whichever key fits)."""
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeEncodeError):
            raise CipherError("cannot rotate: no configured key matches, or the token was altered") from None


def _canonical_key(key: str) -> str:
    """The key, checked to be exactly what `generate_key` makes.

    Lenient base64 decoding ignores characters after the padding, so a key pasted with a stray
    character would otherwise be accepted as a different-looking but equal key; refuse it instead.
    """
    key = key.strip()
    raw = base64.urlsafe_b64decode(key.encode("ascii"))
    if len(raw) != 32 or base64.urlsafe_b64encode(raw).decode("ascii") != key:
        raise ValueError("not a canonical Fernet key")
    return key


def _derive_digest_key(key_material: bytes) -> bytes:
    # HKDF rather than reusing the key: the Fernet key never doubles as an HMAC key.
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_DIGEST_LABEL).derive(key_material)


def generate_key() -> str:
    """A fresh Fernet key, as text for MEMORY_ENCRYPTION_KEYS."""
    return FernetCipher.generate_key()


def check_cipher(cipher: Cipher) -> None:
    """Refuse, at start-up, a cipher that would leave text readable or could not read it back."""
    try:
        token = cipher.encrypt(_PROBE)
    except Exception as exc:
        raise ValueError(f"the cipher failed to encrypt a probe: {type(exc).__name__}") from exc
    if token == _PROBE:
        raise ValueError("the cipher is refused: encrypt returned its input, so text would be stored readable")
    if _PROBE in token:
        raise ValueError("the cipher is refused: encrypt returned its input inside the token, readable")
    try:
        back = cipher.decrypt(token)
    except Exception as exc:
        raise ValueError(f"the cipher is refused: it cannot decrypt its own token ({type(exc).__name__})") from exc
    if back != _PROBE:
        raise ValueError("the cipher is refused: decrypt(encrypt(text)) does not give the text back")
    digest_key = getattr(cipher, "digest_key", None)
    if not isinstance(digest_key, bytes) or len(digest_key) < 16:
        raise ValueError("the cipher is refused: digest_key must be at least 16 secret bytes")
