"""Credentials never shown: the one place that masks passwords in URLs and in messages.

Storage URLs (``postgresql://user:secret@host/db``) travel into error messages, logs,
status lines and reports; everything that shows one goes through ``shown_url`` or
``mask_secrets``.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "mask_secrets", "shown_url"]

MASK = "***"
# scheme://user:password@  (the password may hold anything but '@', '/' and whitespace)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*):(?P<secret>[^@/\s]+)@")
# password=... in a libpq key/value connection string or a query parameter
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>[^\s&;'\"]+)", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """``text`` with every URL password and ``password=...`` value replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    return _PASSWORD_PARAM.sub(lambda m: f"{m.group('head')}{MASK}", text)


def shown_url(url: str) -> str:
    """A URL as it may be shown: its password (if any) masked."""
    return mask_secrets(url)
