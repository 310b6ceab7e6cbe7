"""Secrets never leave the process: redaction by key name and by the shape of the value.

Every backend stores what it is given, in files that get copied, synced and shared: a database URL
with its password, a bearer token pasted into a run's notes, an API key in the config. So the
library redacts, before any backend (or the journal) sees them:

* config values under secret-looking keys (the word ``token`` as in ``hub_token``, ``*secret*``,
  ``*password*``, ``*api_key*``, ``*credential*``, ``*private_key*``...): the whole value becomes
  ``<redacted>``, unless it is a number or a flag (``pad_token_id`` is an id, not a secret);
* in every string of the config, of ``init_kwargs`` text fields (tags, notes, names, descriptions)
  and of ``log()`` values, the parts shaped like a credential: the password of a URL
  (``https://user:pw@host`` -> ``https://user:<redacted>@host``), ``Bearer ...``, OpenAI/Anthropic
  ``sk-...``, Hugging Face ``hf_...``, GitHub ``ghp_...``/``github_pat_...``, Slack ``xox.-...``,
  AWS access key ids (``AKIA...``), PEM private key blocks and JWTs.

Each redaction is announced once per key on the ``tracking`` logger, by key name (never the value).

Configure with :func:`configure` (``extra_patterns``: regexes whose matches are redacted too,
``extra_keys``: more key-name parts; ``enabled=False`` turns value redaction off) or the environment
variable ``TRACKING_REDACT=0``. Key-name redaction of the config cannot be turned off.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ..notices import first_time, notice

REDACTED = "<redacted>"

_SECRET_KEY_PARTS = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "credential",
    "private_key",
    "private-key",
]

# Value shapes. The URL rule keeps the scheme, user and host so the value still says where it points.
_URL_USERINFO = r"(?P<url>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)[^\s/@]+(?=@)"
_SHAPES = [
    r"(?i:\bbearer\s+)(?P<bearer>)[A-Za-z0-9\-._~+/]{8,}=*",
    r"\bsk-[A-Za-z0-9_\-]{16,}",
    r"\bhf_[A-Za-z0-9]{20,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}",
]

# Keys of init_kwargs whose values the SDK needs verbatim to connect or to find its folder: a URL
# with credentials or a token there is how the caller authenticates, not run data to store.
_CONNECTION_KEY = re.compile(r"(uri|url|host|repo|dir|directory|path|location|endpoint)$", re.IGNORECASE)


class _Settings:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.enabled = os.environ.get("TRACKING_REDACT", "1").strip().lower() not in ("0", "false", "no", "off")
        self.extra_patterns: list[str] = []
        self.key_parts = list(_SECRET_KEY_PARTS)
        self.pattern: re.Pattern[str] | None = None  # compiled at first use: ``import tracking_core`` stays cheap


def _compile(extra: list[str]) -> re.Pattern[str]:
    return re.compile("|".join([_URL_USERINFO, *(f"(?:{p})" for p in _SHAPES + extra)]))


_settings = _Settings()


def configure(
    *,
    enabled: bool | None = None,
    extra_patterns: Iterable[str] | None = None,
    extra_keys: Iterable[str] | None = None,
) -> None:
    """Change what is redacted, process-wide (call before ``init``).

    ``extra_patterns`` are regular expressions; every match in a string value is replaced by
    ``<redacted>``. ``extra_keys`` are lower-case parts of key names whose config values are
    redacted whole. ``enabled=False`` stops value-shape redaction (secret-named config keys are
    still redacted).
    """
    with _settings.lock:
        if enabled is not None:
            _settings.enabled = bool(enabled)
        if extra_patterns is not None:
            patterns = [str(pattern) for pattern in extra_patterns]
            for pattern in patterns:
                re.compile(pattern)  # a bad pattern fails here, at the caller, not in a log() call
            _settings.extra_patterns = patterns
            _settings.pattern = None
        if extra_keys is not None:
            _settings.key_parts = _SECRET_KEY_PARTS + [str(part).lower() for part in extra_keys]


_TOKEN_WORD = re.compile(r"(?<![a-z])tokens?(?![a-z])")  # hub_token, HF_TOKEN; not tokenizer_name


def is_secret_key(key: Any) -> bool:
    """Keys such as ``hub_token``, ``WANDB_API_KEY``, ``db_password`` name a secret (``tokenizer_name`` does not)."""
    lowered = str(key).lower()
    return any(
        (_TOKEN_WORD.search(lowered) is not None) if part == "token" else part in lowered
        for part in _settings.key_parts
    )


def _replace(match: re.Match[str]) -> str:
    if match.group("url") is not None:
        return match.group("url") + REDACTED
    if match.group("bearer") is not None:
        return match.group()[: match.start("bearer") - match.start()] + REDACTED
    return REDACTED


def _may_hold_secret(text: str) -> bool:
    """A few substring tests every built-in shape needs; most strings fail them all and skip the regex."""
    return (
        ("://" in text and "@" in text)
        or "earer" in text
        or "EARER" in text
        or "sk-" in text
        or "hf_" in text
        or "gh" in text
        or "_pat_" in text
        or "xox" in text
        or "AKIA" in text
        or "ASIA" in text
        or "PRIVATE KEY" in text
        or "eyJ" in text
    )


def redact_text(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``<redacted>`` (the same object if none)."""
    if not _settings.enabled or (not _settings.extra_patterns and not _may_hold_secret(text)):
        return text
    pattern = _settings.pattern
    if pattern is None:
        pattern = _settings.pattern = _compile(_settings.extra_patterns)
    if pattern.search(text) is None:
        return text
    return pattern.sub(_replace, text)


def announce(where: str, keys: Iterable[str]) -> None:
    """One notice per key and place, once per run: which values were redacted (never what they were)."""
    fresh = [key for key in keys if first_time("redacted", where, key)]
    if fresh:
        notice(f"{where}: secret-looking values redacted under {', '.join(repr(key) for key in fresh)}")


def redact_init_kwargs(kwargs: Any) -> Any:
    """``init_kwargs`` with credential-shaped text in string values (tags, notes, names...) redacted.

    Values under keys the SDK needs verbatim to connect (``*_uri``, ``*url``, ``*host``, ``repo``,
    ``*dir``, ``*path``...) or to authenticate (secret-named keys such as ``api_key``) pass
    through unchanged: they are credentials in use, not run data. Objects other than dicts, lists,
    tuples and strings (an SDK ``Settings`` object) are passed as they are. Never raises.
    """
    if not isinstance(kwargs, Mapping) or not _settings.enabled:
        return kwargs
    changed: list[str] = []
    try:
        result = {
            backend: _redact_tree(options, str(backend), changed) if isinstance(options, Mapping) else options
            for backend, options in kwargs.items()
        }
    except Exception:  # a hostile mapping must not stop the run; its values are passed as given
        return kwargs
    if changed:
        announce("init_kwargs", changed)
    return result


def _redact_tree(node: Any, path: str, changed: list[str], depth: int = 0) -> Any:
    if isinstance(node, str):
        clean = redact_text(node)
        if clean is not node:
            changed.append(path)
        return clean
    if depth > 16:
        return node
    if isinstance(node, Mapping):
        return {
            key: item
            if is_secret_key(key) or _CONNECTION_KEY.search(str(key))
            else _redact_tree(item, f"{path}.{key}", changed, depth + 1)
            for key, item in node.items()
        }
    if type(node) in (list, tuple):
        return type(node)(_redact_tree(item, f"{path}[{index}]", changed, depth + 1) for index, item in enumerate(node))
    return node
