"""Issue 24 defects 2, 3, 5 and the lab side of 12, without a browser.

* 2: ``?M=%C2%B2``, ``?M=--5`` and ``?M=`` + 5,000 digits raised out of ``url_state.parse_value``
  (``int()`` after ``isdigit()``) and blanked the page; JSON nested 10,000 deep raised a
  RecursionError the same way.
* 3: ``true``/``false`` in an Integer key passed Param (bool is an int) and then broke the Bokeh
  slider: the controls never rendered.
* 5: a 0-byte CSV never reached the server (an empty payload is no change), so nothing said why;
  blank, binary and header-only files are named too.
* 12: a URL of 2,000 keys gets a badge of bounded length that still names the setting given a bad
  value; Tornado's own limit of 1,000 query arguments is lifted by ``gpexplorer serve``.
"""

from __future__ import annotations

import base64

import panel as pn
import param
import pytest

from gpexplorer.ui import serve, url_state
from gpexplorer.ui.black_box import data as black_box_data
from gpexplorer.ui.black_box import settings as black_box_cfg
from gpexplorer.ui.black_box.lab import BlackBoxLab
from gpexplorer.ui.convolutional import settings as convolutional_cfg
from gpexplorer.ui.file_input import SizedFileInput
from gpexplorer.ui.primer import settings as primer_cfg
from gpexplorer.ui.random_features import settings as random_features_cfg
from gpexplorer.ui.linearized import settings as linearized_cfg
from gpexplorer.ui.sparse import settings as sparse_cfg
from gpexplorer.ui.sparse.lab import SparseRegressionLab

SETTINGS = {
    "primer": (primer_cfg.PrimerSettings, primer_cfg.url_parameters()),
    "sparse_regression": (sparse_cfg.LabSettings, sparse_cfg.url_parameters() + ["inducing_inputs"]),
    "linearized": (linearized_cfg.LinearizedSettings, linearized_cfg.url_parameters()),
    "black_box": (black_box_cfg.BlackBoxSettings, black_box_cfg.url_parameters()),
    "convolutional": (convolutional_cfg.PatchesSettings, convolutional_cfg.url_parameters()),
    "random_features": (random_features_cfg.RandomFeaturesSettings, random_features_cfg.url_parameters()),
}


def apply(lab_name, query):
    settings_class, names = SETTINGS[lab_name]
    settings = settings_class()
    return settings, *url_state.apply_query(settings, query, names)


def typed_keys(lab_name, kind):
    settings_class, names = SETTINGS[lab_name]
    return [n for n in names if type(settings_class.param[n]) is kind]


# --- defect 2: numbers that int() refuses ----------------------------------------------------
@pytest.mark.parametrize("raw", ["\u00b2", "--5", "5" * 5000, "\u0663", "+-1", "1_000", "0x10", " ", ""])
@pytest.mark.parametrize("lab_name", list(SETTINGS))
def test_an_unreadable_integer_is_named_not_raised(lab_name, raw):
    """`?M=%C2%B2`, `?M=--5`, 5,000 digits: issue 24 defect 2 (they raised out of apply_query)."""
    for key in typed_keys(lab_name, param.Integer):
        settings, accepted, rejected = apply(lab_name, {key: raw})
        assert accepted == [] and key in rejected, (key, raw)
        assert getattr(settings, key) == settings.param[key].default


def test_panels_own_location_reads_any_query():
    """The served page crashed first in Panel's ``Location`` (``servable()`` adds one), whose
    ``parse_query`` calls ``int("²")``: the script handler failed and the page stayed blank."""
    from panel.io.location import Location

    query = Location(search="?M=%C2%B2&n_bins=" + "5" * 5000 + "&rounds=--5&M2=7").query_params
    assert query["M"] == "\u00b2" and query["rounds"] == "--5" and query["M2"] == 7


def test_the_reasons_say_what_was_wrong():
    _, _, rejected = apply("black_box", {"M": "\u00b2", "n_bins": "5" * 5000, "rounds": "0", "num_samples": "",
                                         "control_variate": "yes"})
    assert rejected == {"M": "must be an integer, not text",
                        "n_bins": "a 5,000-digit number; must be an integer from 20 to 811",
                        "rounds": "must be at least 1, not 0",
                        "num_samples": "must be an integer, not empty",
                        "control_variate": "must be true or false, not text"}


@pytest.mark.parametrize("query", [
    {"inducing_inputs": "[" * 10_000}, {"approximations": "[" * 15_000}, {"kernel": "1" * 5000},
    {"jitter": "9" * 5000}, {"variance": "\u0663"}, {"variance": "1e999"}, {"lengthscale": "-inf"},
])
def test_untyped_and_decimal_values_never_raise(query):
    """JSON nested 10,000 deep (RecursionError) and 5,000 digits in a choice raised too; a Unicode
    digit was taken as a number."""
    _, accepted, rejected = apply("sparse_regression", query)
    assert accepted == [] and set(rejected) == set(query)


# --- defect 3: booleans in number keys ----------------------------------------------------------
@pytest.mark.parametrize("lab_name", list(SETTINGS))
@pytest.mark.parametrize("raw", ["true", "false", "True", "FALSE"])
def test_a_boolean_is_refused_by_every_number_key(lab_name, raw):
    for kind in (param.Integer, param.Number):
        for key in typed_keys(lab_name, kind):
            settings, accepted, rejected = apply(lab_name, {key: raw})
            assert key in rejected and raw.lower() in rejected[key], (key, rejected)
            value = getattr(settings, key)
            assert not isinstance(value, bool) and value == settings.param[key].default


def test_valid_values_still_round_trip_with_their_types():
    settings, accepted, rejected = apply("sparse_regression", {
        "M": "+7", "variance": "2", "lengthscale": ".25", "noise_variance": "1e-06", "show_samples": "TRUE",
        "jitter": "1e-08", "approximations": '["exact","vfe"]', "kernel": "matern32"})
    assert rejected == {} and len(accepted) == 8
    assert settings.M == 7 and type(settings.M) is int and settings.show_samples is True
    assert settings.variance == 2 and settings.lengthscale == 0.25 and settings.jitter == 1e-8
    assert "variance=2&" in url_state.query_of(settings, SETTINGS["sparse_regression"][1], {})
    settings, _, rejected = apply("linearized", {"expression": "2", "x0": "-1.5"})
    assert rejected == {} and settings.expression == "2" and settings.x0 == -1.5  # a g of "2" is text


def _controls_render(lab):
    root = pn.panel(lab.controls()).get_root()  # Bokeh validates every widget's value here
    assert root is not None


@pytest.fixture(scope="module")
def sparse_lab():
    return SparseRegressionLab()


def test_sparse_controls_render_after_booleans_in_integer_keys(sparse_lab):
    """`/sparse_regression?M=true`, `?restarts=true`, `?seed=false`: Bokeh's Slider refused the
    bool Param took, and the page showed the plot without its controls."""
    sparse_lab.apply_url({"M": "true", "restarts": "true", "seed": "false", "max_iter": "\u00b2"})
    for key in ("M (must be an integer, not true)", "restarts (", "seed (must be an integer, not false)",
                "max_iter ("):
        assert key in sparse_lab.url_warning
    assert type(sparse_lab.settings.M) is int and type(sparse_lab.settings.restarts) is int
    _controls_render(sparse_lab)


def _finish(lab):
    lab.cancel_job()
    if lab.job is not None:
        lab.job.join(60)
        lab.poll_job()


def test_black_box_renders_after_a_boolean_seed():
    """`/black_box?dataset=toy_binary&data_seed=true` never rendered ("Error rendering Bokeh items")."""
    lab = BlackBoxLab()
    _finish(lab)
    lab.apply_url({"dataset": "toy_binary", "data_seed": "true", "M": "--5"})
    _finish(lab)
    assert lab.settings.dataset == "toy_binary" and lab.settings.data_seed == 0
    assert "data_seed (must be an integer, not true)" in lab.url_warning and "M (" in lab.url_warning
    assert "data_seed (" in lab.badge_pane.object
    _controls_render(lab)


# --- defect 12 (the lab side): thousands of keys -------------------------------------------------
def test_thousands_of_keys_give_a_short_badge_that_names_the_bad_setting():
    query = {f"k{i}": "1" for i in range(2000)} | {"M": "true", "n_bins": "50"}
    settings, accepted, rejected = apply("black_box", query)
    assert accepted == ["n_bins"] and settings.n_bins == 50
    line = url_state.describe(rejected)
    assert line == ("ignored URL values: M (must be an integer, not true); "
                    "k0, k1, k2, k3, k4, k5, k6, k7 and 1,992 more (not settings of this page)")
    two = url_state.describe({"a": url_state.NOT_A_SETTING, "b": url_state.NOT_A_SETTING})
    assert two == "ignored URL values: a, b (not settings of this page)"


def test_serve_lifts_tornados_limit_of_1000_query_arguments():
    from tornado import httputil

    def request(uri):
        return httputil.HTTPServerRequest(start_line=httputil.RequestStartLine("GET", uri, "HTTP/1.1"),
                                          headers=httputil.HTTPHeaders({"Host": "127.0.0.1"}))

    uri = "/black_box?" + "&".join(f"k{i}=1" for i in range(2000))
    with pytest.raises(httputil.HTTPInputError):
        request(uri)  # Tornado's default: a bare HTTP 400
    try:
        assert serve.allow_every_query_that_fits()
        assert len(request(uri).arguments) == 2000
        assert request("/b?" + "&" * 65_536).arguments == {}  # the most fields a 64 KiB request line holds
    finally:
        httputil.set_parse_body_config(httputil.ParseBodyConfig())


# --- defect 5: uploads that say nothing -----------------------------------------------------------
def test_an_empty_file_reaches_the_server_and_the_same_file_again_fires_again():
    seen = []
    widget = SizedFileInput()
    widget.param.watch(lambda e: seen.append(e.new), "value")
    widget.payload = "1700000000000.1:"  # what the page sends for a 0-byte file
    widget.payload = "1700000000001.2:"  # the same empty file chosen again
    good = base64.b64encode(b"x,y\n1,2\n").decode()
    widget.payload, widget.payload = f"1.3:{good}", f"1.4:{good}"
    assert seen == [b"", b"", b"x,y\n1,2\n", b"x,y\n1,2\n"]


def test_a_zero_byte_csv_gets_a_message_and_the_data_stay(sparse_lab):
    before = sparse_lab.dataset
    sparse_lab.upload.filename = "empty.csv"
    sparse_lab.upload.payload = "1700000000000.1:"
    assert "Upload rejected: empty.csv is empty (0 bytes)" in sparse_lab.upload_message.object
    assert sparse_lab.upload_message.visible and sparse_lab.dataset is before


@pytest.mark.parametrize("contents, message", [
    (b"", "bad.csv is empty (0 bytes)"),
    (b"x,y\n", "bad.csv: CSV has a header but no data rows"),
    (b"   \n\t\r\n  ", "bad.csv holds only blank space (9 bytes)"),
    (b"\x00" * 100, "bad.csv is not a text file (it holds NUL bytes)"),
    (b"x,y\n\xff\xfe,1\n2,3\n", "bad.csv: file is not UTF-8 text (bad byte at position 4)"),
    (b"x,y\n" + b"1,2\n" * 600_000, "bad.csv is 2.4 MB; uploads are limited to 2 MB"),
], ids=["empty", "header-only", "blank", "binary", "not-utf8", "over-2MB"])
@pytest.mark.parametrize("parse", [sparse_cfg.parse_upload, linearized_cfg.parse_upload,
                                   black_box_data.parse_upload], ids=["sparse", "linearized", "black_box"])
def test_every_unusable_csv_is_named(parse, contents, message):
    with pytest.raises(ValueError) as info:
        parse(contents, "bad.csv")
    assert str(info.value).startswith(message)
