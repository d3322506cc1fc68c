"""Fuzz the URL parser of every lab (issue 24): random keys and values, headless.

Queries are built as Bokeh hands them over (name -> [bytes], a key may repeat) from keys that are
settings, page keys or anything, and values a hostile but fair user could paste: Unicode digits,
signs, huge integers, booleans, empty and blank values, NaN/inf spellings, JSON nested deep,
very long strings. Properties, for the sparse-regression, linearized and black-box labs:

* applying the query never raises and accounts for every key (applied, refused, or a page key);
* every setting keeps its parameter's type (never a bool in a number) and stays in its bounds
  or among its choices, so the widgets built from it render (Bokeh's sliders refuse a bool);
* a refused key is named in the badge line, and keeps the value it had;
* a value of the wrong kind for a number key is refused;
* a state written to the address bar reads back to the same state, nothing refused.

URL parsing cannot crash the interpreter, so it runs in this process (no child); the quick
profile takes a few seconds. ``GPX_FUZZ=full`` runs many more examples.
"""

from __future__ import annotations

import math
import types
import urllib.parse

import param
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpexplorer.ui import url_state
from gpexplorer.ui.black_box import settings as black_box_cfg
from gpexplorer.ui.convolutional import settings as convolutional_cfg
from gpexplorer.ui.primer import settings as primer_cfg
from gpexplorer.ui.random_features import settings as random_features_cfg
from gpexplorer.ui.linearized import settings as linearized_cfg
from gpexplorer.ui.sparse import settings as sparse_cfg
from gpexplorer.ui.sparse.lab import SparseRegressionLab


def _sparse_check(settings_obj):
    """The sparse lab's own check of URL values (inducing inputs), bound to a settings object."""
    stub = types.SimpleNamespace(settings=settings_obj)
    return lambda name, value: SparseRegressionLab._check_url_value(stub, name, value)


LABS = {
    # the kernel expression is any text here, as the black-box page's g is; the lab refuses what
    # parse_kernel refuses with a badge (tests/ui/test_primer_logic.py, test_primer_page.py)
    "primer": (primer_cfg.PrimerSettings, primer_cfg.url_parameters(), None),
    "sparse_regression": (sparse_cfg.LabSettings, sparse_cfg.url_parameters() + ["inducing_inputs"], _sparse_check),
    "linearized": (linearized_cfg.LinearizedSettings, linearized_cfg.url_parameters(), None),
    "black_box": (black_box_cfg.BlackBoxSettings, black_box_cfg.url_parameters(), None),
    "convolutional": (convolutional_cfg.PatchesSettings, convolutional_cfg.url_parameters(), None),
    "random_features": (random_features_cfg.RandomFeaturesSettings, random_features_cfg.url_parameters(), None),
}
ALL_NAMES = sorted({n for _, names, _ in LABS.values() for n in names})

SPECIAL = ["true", "false", "True", "FALSE", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e999", "-1e999",
           "", " ", "\t", "--5", "+-1", "-", "+", ".", "1.", ".5", "-0", "0x10", "1_000", "1e", "e5", "\u00b2",
           "\u0663", "\uff15", "\u2167", "\u00bd", "null", "[]", "{}", "[", "[[", "[1,2]", "[NaN]", '["exact"]',
           '["fg","mog1"]', "1e-06", "1e-08", "0.01", "%C2%B2", "\x00", "\ud7ff"]

#: digits other than ASCII 0-9 (Arabic-Indic, full-width, superscripts, Roman numerals...)
unicode_digits = st.text(alphabet=st.characters(categories=["Nd", "No", "Nl"], exclude_characters="0123456789"),
                         min_size=1, max_size=8)
#: 26 to 6,000 digits (str() of such an int is refused past 4,300 digits, so build the text)
huge_integers = st.tuples(st.sampled_from(["", "-", "+"]), st.integers(1, 9), st.integers(25, 6000),
                          st.integers(0, 9)).map(lambda t: f"{t[0]}{t[1]}{str(t[3]) * t[2]}")
values = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(-10**6, 10**6).map(str),
    huge_integers,
    st.tuples(st.sampled_from(["", "-", "+", "--", "+-"]), unicode_digits).map("".join),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(1, 25_000).map(lambda n: "9" * n),
    st.integers(1, 25_000).map(lambda n: "[" * n),
    st.integers(20_000, 20_010).map(lambda n: "a" * n),
    st.text(max_size=40),
)
keys = st.one_of(st.sampled_from(ALL_NAMES), st.sampled_from(url_state.PAGE_KEYS), st.text(max_size=60))
raw_queries = st.lists(st.tuples(keys, values), max_size=12)


def session_args(pairs):
    """Bokeh's ``session_args``: name -> every value given, as bytes, in order."""
    args = {}
    for key, value in pairs:
        args.setdefault(key, []).append(value.encode("utf-8", "surrogatepass"))
    return args


def assert_typed_and_in_bounds(settings_obj, names):
    """Every setting is of its parameter's type and within its bounds or choices."""
    for name in names:
        p, value = settings_obj.param[name], getattr(settings_obj, name)
        if isinstance(p, param.Boolean):
            assert isinstance(value, bool), (name, value)
        elif isinstance(p, param.Number):
            assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, value)
            assert not isinstance(p, param.Integer) or isinstance(value, int), (name, value)
            assert math.isfinite(value), (name, value)
            low, high = p.bounds or (None, None)
            assert (low is None or value >= low) and (high is None or value <= high), (name, value)
        elif isinstance(p, param.ListSelector):
            assert isinstance(value, list) and all(v in p.get_range().values() for v in value), (name, value)
        elif isinstance(p, param.Selector):
            assert any(value == o and type(value) is type(o) for o in p.get_range().values()), (name, value)
        elif isinstance(p, param.String):
            assert isinstance(value, str), (name, value)
        elif isinstance(p, param.List):
            assert isinstance(value, list) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in value)


@pytest.mark.parametrize("lab_name", list(LABS))
@given(pairs=raw_queries)
def test_any_query_is_applied_or_named_never_raised(lab_name, pairs):
    settings_class, names, make_check = LABS[lab_name]
    settings_obj = settings_class()
    before = {n: getattr(settings_obj, n) for n in names}
    query = url_state.read_query(session_args(pairs))
    if pairs:  # a repeated key: the last value counts
        last = {}
        for key, value in pairs:
            last[key] = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        assert query == last
    accepted, rejected = url_state.apply_query(settings_obj, query, names,
                                               make_check(settings_obj) if make_check else None)
    assert set(accepted) | set(rejected) == {k for k in query if k not in url_state.PAGE_KEYS}
    assert not set(accepted) & set(rejected)
    assert_typed_and_in_bounds(settings_obj, names)
    line = url_state.describe(rejected) if rejected else ""
    for key in rejected:
        if key in names:
            assert f"{key} (" in line and getattr(settings_obj, key) == before[key], (key, rejected[key])
    assert len(line) < 400 + 260 * sum(k in names for k in rejected)


@pytest.mark.parametrize("lab_name", list(LABS))
@given(data=st.data())
def test_a_value_of_the_wrong_kind_for_a_number_key_is_refused(lab_name, data):
    settings_class, names, _ = LABS[lab_name]
    numbers = [n for n in names if isinstance(settings_class.param[n], param.Number)]
    key = data.draw(st.sampled_from(numbers))
    wrong = data.draw(st.one_of(
        st.sampled_from(["true", "false", "TRUE", "", " ", "nan", "inf", "-inf", "--5", "\u00b2", "1e999", "[1]"]),
        st.tuples(st.sampled_from(["", "-", "--"]), unicode_digits).map("".join),
        huge_integers))
    settings_obj = settings_class()
    accepted, rejected = url_state.apply_query(settings_obj, {key: wrong}, names)
    assert accepted == [] and key in rejected
    assert f"{key} (" in url_state.describe(rejected)
    assert getattr(settings_obj, key) == settings_class.param[key].default


def valid_value(p):
    """A strategy of values ``p`` accepts (the state a user can reach with the widgets)."""
    if isinstance(p, param.Boolean):
        return st.booleans()
    if isinstance(p, param.Integer):
        return st.integers(*p.bounds)
    if isinstance(p, param.Number):
        return st.floats(*p.bounds)
    if isinstance(p, param.ListSelector):
        return st.lists(st.sampled_from(list(p.get_range().values())), unique=True)
    if isinstance(p, param.Selector):
        return st.sampled_from(list(p.get_range().values()))
    if isinstance(p, param.String):
        return st.text(max_size=80)
    if isinstance(p, param.List):
        return st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20)
    raise AssertionError(f"no strategy for {type(p).__name__}")


@pytest.mark.parametrize("lab_name", list(LABS))
@given(data=st.data())
def test_the_address_bar_reads_back_to_the_same_state(lab_name, data):
    """Typed parsing refuses nothing the address bar writes (``url_state.query_of``)."""
    settings_class, names, make_check = LABS[lab_name]
    first = settings_class()
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=10))
    for name in chosen:
        setattr(first, name, data.draw(valid_value(first.param[name]), label=name))
    search = url_state.query_of(first, names, {})
    query = {k: v[-1] for k, v in urllib.parse.parse_qs(search.lstrip("?"), keep_blank_values=True).items()}
    second = settings_class()
    accepted, rejected = url_state.apply_query(second, query, names, make_check(second) if make_check else None)
    assert rejected == {}
    for name in names:
        assert getattr(second, name) == getattr(first, name), name


@pytest.fixture(scope="module")
def sparse_lab():
    return SparseRegressionLab()


@settings(max_examples=10)
@given(pairs=raw_queries)
def test_the_sparse_lab_itself_takes_any_query(sparse_lab, pairs):
    """Through ``LabBase.apply_url`` on a real lab (inducing inputs in the URL decide M there):
    nothing raises, the settings stay typed, the badge names each refused setting."""
    sparse_lab.url_warning = None
    query = url_state.read_query(session_args(pairs))
    sparse_lab.apply_url(query)
    names = LABS["sparse_regression"][1]
    assert_typed_and_in_bounds(sparse_lab.settings, names)
    if "inducing_inputs" in query and "inducing_inputs (" not in (sparse_lab.url_warning or ""):
        assert sparse_lab.settings.M == len(sparse_lab.settings.inducing_inputs)
    for key in query:
        if key in names and f"{key} (" not in (sparse_lab.url_warning or ""):
            assert key in urllib.parse.parse_qs(sparse_lab.address_bar.search.lstrip("?")), key
