"""Encryption at rest: Fernet round trips, key rotation, and the start-up check that refuses a
cipher which would leave memory text readable."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from portal.adapters.cipher import Cipher, CipherError, FernetCipher, check_cipher, generate_key

SECRET = "Anna takes her coffee with oat milk — née Müller"


def test_round_trip_gives_the_text_back_and_hides_it():
    cipher = FernetCipher([generate_key()])
    token = cipher.encrypt(SECRET)

    assert cipher.decrypt(token) == SECRET
    assert SECRET not in token
    assert "oat milk" not in token
    assert isinstance(cipher, Cipher)
    check_cipher(cipher)


def test_same_text_encrypts_differently_each_time():
    cipher = FernetCipher([generate_key()])
    assert cipher.encrypt(SECRET) != cipher.encrypt(SECRET)


def test_rotation_old_tokens_still_read_and_rotate_moves_them_to_the_new_key():
    old_key, new_key = generate_key(), generate_key()
    old = FernetCipher([old_key])
    old_token = old.encrypt(SECRET)

    both = FernetCipher.from_env_value(f"{new_key}, {old_key}")
    assert both.decrypt(old_token) == SECRET

    rotated = both.rotate(old_token)
    assert rotated != old_token
    assert FernetCipher([new_key]).decrypt(rotated) == SECRET
    # Once the old key is dropped, only rotated tokens remain readable.
    with pytest.raises(CipherError):
        FernetCipher([new_key]).decrypt(old_token)
    with pytest.raises(CipherError):
        old.decrypt(rotated)


def test_new_text_is_encrypted_with_the_first_key():
    old_key, new_key = generate_key(), generate_key()
    token = FernetCipher([new_key, old_key]).encrypt(SECRET)
    assert FernetCipher([new_key]).decrypt(token) == SECRET
    with pytest.raises(CipherError):
        FernetCipher([old_key]).decrypt(token)


def test_a_wrong_or_tampered_token_is_refused_without_quoting_it():
    cipher = FernetCipher([generate_key()])
    token = cipher.encrypt(SECRET)
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(CipherError) as caught:
        cipher.decrypt(tampered)
    assert tampered not in str(caught.value)
    with pytest.raises(CipherError):
        FernetCipher([generate_key()]).decrypt(token)


def test_digest_key_is_a_derived_secret_tied_to_the_primary_key():
    key, other = generate_key(), generate_key()
    cipher = FernetCipher([key, other])

    assert len(cipher.digest_key) == 32
    assert cipher.digest_key not in (key.encode(), FernetCipher([other]).digest_key)
    assert FernetCipher([key]).digest_key == cipher.digest_key
    # Same text, different deployments: keyed hashes do not match, so they cannot be compared.
    words = b"coffee oat milk"
    assert (
        hmac.new(cipher.digest_key, words, hashlib.sha256).digest()
        != hmac.new(FernetCipher([other]).digest_key, words, hashlib.sha256).digest()
    )


@pytest.mark.parametrize(
    "value",
    ["not-a-key", "", " , ", "{good},short", "{good},{good}x"],
)
def test_bad_keys_name_the_variable_and_never_echo_the_key(value):
    good = generate_key()
    value = value.replace("{good}", good)
    with pytest.raises(ValueError, match="MEMORY_ENCRYPTION_KEYS") as caught:
        FernetCipher.from_env_value(value)
    assert good not in str(caught.value)
    assert "not-a-key" not in str(caught.value)


def test_bad_key_position_is_reported():
    with pytest.raises(ValueError, match="key 2 of 2"):
        FernetCipher.from_env_value(f"{generate_key()},nope")


class _IdentityCipher:
    digest_key = b"x" * 32

    def encrypt(self, text: str) -> str:
        return text

    def decrypt(self, token: str) -> str:
        return token


class _PrefixCipher(_IdentityCipher):
    def encrypt(self, text: str) -> str:
        return "enc:" + text

    def decrypt(self, token: str) -> str:
        return token.removeprefix("enc:")


class _LossyCipher(_IdentityCipher):
    def encrypt(self, text: str) -> str:
        return text[::-1]

    def decrypt(self, token: str) -> str:
        return token.upper()


def test_check_cipher_refuses_an_encrypt_that_returns_its_input():
    with pytest.raises(ValueError, match="encrypt returned its input"):
        check_cipher(_IdentityCipher())


def test_check_cipher_refuses_a_token_that_shows_the_text():
    with pytest.raises(ValueError, match="encrypt returned its input"):
        check_cipher(_PrefixCipher())


def test_check_cipher_refuses_a_cipher_that_cannot_read_back():
    with pytest.raises(ValueError, match="does not give the text back"):
        check_cipher(_LossyCipher())


def test_check_cipher_refuses_a_missing_digest_key():
    class NoDigest:
        digest_key = b""

        def encrypt(self, text: str) -> str:
            return FernetCipher([generate_key()]).encrypt(text)

        def decrypt(self, token: str) -> str:
            return "probe text"

    with pytest.raises(ValueError, match="digest_key"):
        check_cipher(NoDigest())


def test_repr_does_not_show_keys():
    key = generate_key()
    assert key not in repr(FernetCipher([key]))
