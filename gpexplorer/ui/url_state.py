"""A lab's settings in the URL, one key at a time (issue 14 bug 5).

Panel's ``Location.sync`` applied every query value in one ``param.update``: one bad value made it
drop the good ones with it and report them all as invalid, and the address bar kept what it was
given. Here each key is applied on its own, every rejected key is named with its reason, and the
query string of the state actually used is computed for :class:`gpexplorer.ui.address_bar.AddressBar`.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse

#: query keys of the page around the lab (lessons, presenter mode): never a lab setting
PAGE_KEYS = ("lesson", "step", "presenter")
MAX_QUERY_CHARS = 20_000  # longer values are refused unread (a lab's own URL stays far below)


def read_query(session_args) -> dict:
    """``pn.state.session_args`` (name -> [bytes]) as name -> the last value, a string."""
    query = {}
    for key, values in (session_args or {}).items():
        value = values[-1] if isinstance(values, (list, tuple)) and values else values
        query[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return query


def apply_query(settings, query: dict, names, check=None):
    """Apply ``query`` (key -> raw string) to ``settings`` key by key; returns (accepted names,
    {rejected key: reason}). ``check(name, value)`` may refuse a value Param accepts (it returns
    a reason) and is called with the deserialised value."""
    accepted, rejected = [], {}
    for key, raw in query.items():
        if key in PAGE_KEYS:
            continue
        if key not in names:
            rejected[key] = "not a setting of this page"
            continue
        if len(raw) > MAX_QUERY_CHARS:
            rejected[key] = f"{len(raw):,} characters; at most {MAX_QUERY_CHARS:,} are read"
            continue
        value = parse_value(raw)
        reason = "not a finite number" if isinstance(value, float) and not math.isfinite(value) else None
        reason = reason or (check(key, value) if check else None)
        if reason is None:
            try:
                settings.param.update({key: value})
            except Exception as err:  # noqa: BLE001 - Param's message names the bound or the type
                reason = _short(err)
        if reason is None:
            accepted.append(key)
        else:
            rejected[key] = reason
    return accepted, rejected


def parse_value(raw: str):
    """A query value as Panel's ``Location`` reads it, without ``eval``: an integer, a number,
    JSON (lists, objects), true/false, or else the text itself."""
    text = raw.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith(("[", "{")):
        try:
            return json.loads(text)
        except ValueError:
            return raw
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return raw


def _serialized(settings, name, value) -> str:
    value = settings.param[name].serialize(value)
    return value if isinstance(value, str) else json.dumps(value)


def _short(err) -> str:
    """Param's message without the class and parameter name (the key is named beside it)."""
    text = re.sub(r"^(\w+ parameter )?'[\w.]+'\s+", "", str(err).split("\n")[0]).rstrip(".")
    text = text.replace("<class 'str'>", "text")
    return text[:160]


def query_of(settings, names, page_query: dict, keep=(), overrides=None) -> str:
    """The query string of the state used: every setting in ``names`` that differs from its
    default or is in ``keep`` (the keys the URL came with), serialised from ``settings`` (or from
    ``overrides``, name -> the value actually used), then the page's own keys as they came."""
    overrides = overrides or {}
    pairs = []
    for name in names:
        value = overrides.get(name, getattr(settings, name))
        if name in keep or value != settings.param[name].default:
            pairs.append((name, _serialized(settings, name, value)))
    pairs += [(k, v) for k, v in page_query.items() if k in PAGE_KEYS]
    return "?" + urllib.parse.urlencode(pairs) if pairs else ""


def describe(rejected: dict) -> str:
    """One line naming every rejected key and why."""
    return "ignored URL values: " + "; ".join(f"{key} ({reason})" for key, reason in rejected.items())
