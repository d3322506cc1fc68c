"""A lab's settings in the URL, one key at a time (issue 14 bug 5).

Panel's ``Location.sync`` applied every query value in one ``param.update``: one bad value made it
drop the good ones with it and report them all as invalid, and the address bar kept what it was
given. Here each key is applied on its own, every rejected key is named with its reason, and the
query string of the state actually used is computed for :class:`gpexplorer.ui.address_bar.AddressBar`.

Each value is read by the type of its parameter (issue 24 defects 2 and 3): an Integer takes ASCII
digits only (no superscripts, no "--5", at most ``MAX_DIGITS`` of them, never true/false, which
Param would take since bool is an int and Bokeh's sliders then refuse), a Number a finite decimal
number (never true/false), a Boolean true or false, a String the text as it came. Nothing a URL
holds raises out of :func:`apply_query`: a value it cannot use is named in the badge.

Panel parses the same query once more for its ``Location`` model (``servable()`` adds one) with
``panel.util.parse_query``, which calls ``int()`` on any ``str.isdigit()`` value: "²" or 5,000
digits raised there, in the page's script handler, and the page stayed blank before any lab code
ran. :func:`guard_panel_location` (called on import) makes that parse fall back, on such a value,
to :func:`parse_value` key by key; the lab's settings never come from it.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse

import param

#: query keys of the page around the lab (lessons, presenter mode): never a lab setting
PAGE_KEYS = ("lesson", "step", "presenter")
MAX_QUERY_CHARS = 20_000  # longer values are refused unread (a lab's own URL stays far below)
NOT_A_SETTING = "not a setting of this page"
MAX_DIGITS = 30  # a whole number with more digits is beyond every bound (and int() refuses 4,300)
MAX_NAMED = 8  # the badge names at most this many keys that are not settings, then counts the rest
_INTEGER = re.compile(r"[+-]?[0-9]+")  # [0-9], not \d: "²" and other Unicode digits are refused
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


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
            rejected[key] = NOT_A_SETTING
            continue
        if len(raw) > MAX_QUERY_CHARS:
            rejected[key] = f"{len(raw):,} characters; at most {MAX_QUERY_CHARS:,} are read"
            continue
        try:
            value = parse_for(settings.param[key], raw)
        except ValueError as err:
            rejected[key] = str(err)
            continue
        try:
            reason = check(key, value) if check else None
        except Exception as err:  # noqa: BLE001 - a lab's check must not take the page down
            reason = _short(err)
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


def parse_for(parameter, raw: str):
    """``raw`` read as a value of ``parameter``'s type; ValueError says why it cannot be (its
    bounds and choices are left to Param, whose message names them)."""
    text = raw.strip()
    if isinstance(parameter, param.Boolean):
        if text.lower() not in ("true", "false"):
            raise ValueError(f"must be true or false, not {_what(text)}")
        return text.lower() == "true"
    if isinstance(parameter, param.Integer):
        if not _INTEGER.fullmatch(text):
            raise ValueError(f"must be an integer, not {_what(text)}")
        digits = len(text.lstrip("+-"))
        if digits > MAX_DIGITS:
            raise ValueError(f"a {digits:,}-digit number; must be an integer{_bounds(parameter)}")
        return int(text)
    if isinstance(parameter, param.Number):
        if not _NUMBER.fullmatch(text):
            if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
                raise ValueError("not a finite number")
            raise ValueError(f"must be a number, not {_what(text)}")
        if _INTEGER.fullmatch(text) and len(text) <= MAX_DIGITS:
            return int(text)  # as the address bar wrote it: "2", not "2.0"
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"not a finite number (beyond +-1.8e308); must be a number{_bounds(parameter)}")
        return value
    if isinstance(parameter, param.String):
        return raw
    value = parse_value(raw)
    if isinstance(value, bool) and isinstance(parameter, param.Selector) and \
            not any(isinstance(o, bool) for o in parameter.get_range().values()):
        raise ValueError(f"not one of the choices: {text.lower()}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _what(text: str) -> str:
    """How a refused value is named in the badge: short, and never the whole of a long paste."""
    if not text:
        return "empty"
    if text.lower() in ("true", "false"):
        return text.lower()
    return "text"


def _bounds(parameter) -> str:
    """" from 2 to 100", " at least 0", ... or "" for a parameter without bounds."""
    low, high = parameter.bounds or (None, None)
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None or high is not None:
        return f" at least {low:g}" if high is None else f" at most {high:g}"
    return ""


def parse_value(raw: str):
    """A query value of an untyped setting (a choice, a list) as Panel's ``Location`` reads it,
    without ``eval``: an integer, a number, JSON (lists, objects), true/false, or else the text
    itself. Never raises: a number of more than ``MAX_DIGITS`` digits is read as a float (``int()``
refuses 4,300), JSON nested too deep stays text, and only ASCII digits make a number."""
    text = raw.strip()
    if _INTEGER.fullmatch(text) and len(text) <= MAX_DIGITS:
        return int(text)
    if _NUMBER.fullmatch(text) or text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return float(text)
    if text.startswith(("[", "{")):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return raw
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return raw


def guard_panel_location() -> None:
    """Let Panel's ``Location`` read any query: when ``panel.util.parse_query`` raises, each key
    is read by :func:`parse_value` instead (which never raises). Idempotent."""
    from panel.io import location

    original = location.parse_query
    if getattr(original, "_gpexplorer_guard", False):
        return

    def parse_query(query: str) -> dict:
        try:
            return original(query)
        except Exception:  # noqa: BLE001 - any value a URL can hold must leave the page usable
            return {key: parse_value(value) for key, value in urllib.parse.parse_qsl(query[1:])}

    parse_query._gpexplorer_guard = True
    location.parse_query = parse_query


guard_panel_location()


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
    """One line naming every rejected key and why: each setting given a bad value, then the keys
    that are not settings, at most ``MAX_NAMED`` of them by name and a count of the others (a URL
    of 2,000 keys gives a badge of two lines)."""
    unknown = [_key(key) for key, reason in rejected.items() if reason == NOT_A_SETTING]
    parts = [f"{_key(key)} ({reason})" for key, reason in rejected.items() if reason != NOT_A_SETTING]
    if len(unknown) == 1:
        parts.append(f"{unknown[0]} ({NOT_A_SETTING})")
    elif unknown:
        more = f" and {len(unknown) - MAX_NAMED:,} more" if len(unknown) > MAX_NAMED else ""
        parts.append(f"{', '.join(unknown[:MAX_NAMED])}{more} (not settings of this page)")
    return "ignored URL values: " + "; ".join(parts)


def _key(key: str) -> str:
    """A key as the badge names it: at most 40 characters."""
    return key if len(key) <= 40 else key[:37] + "..."


def grouped_names(groups) -> list:
    """Every setting of ``groups`` (panel title -> names), in display order: what a lab's URL carries."""
    return [name for names in groups.values() for name in names]


def order_controls(cls, names):
    """Give the settings ``names`` of the Param class ``cls`` increasing precedence (the controls'
    order on the page); returns cls."""
    for i, name in enumerate(names):
        cls.param[name].precedence = 1 + i
    return cls
