"""The session pool's parts that need no server: links, query keys, sizes and the command line's
refusals (the served behaviour is tested in Chromium: tests/ui/test_session_pool_page.py)."""

import pytest
from bokeh.document import Document

from gpexplorer import cli
from gpexplorer.ui import session_pool
from gpexplorer.ui.session_pool import MAX_SIZE, SessionPool, is_prepared, parse_link, query_key


@pytest.mark.parametrize("link, expected", [
    ("sparse_regression", ("/sparse_regression", "")),
    ("/sparse_regression/", ("/sparse_regression", "")),
    ("primer?lesson=occam&step=2", ("/primer", "lesson=occam&step=2")),
])
def test_a_link_is_a_page_and_its_query(link, expected):
    assert parse_link(link) == expected


@pytest.mark.parametrize("link", ["", "/", "?M=3", "http://example.org/sparse_regression", "//host/page"])
def test_a_link_that_is_not_a_page_of_this_server_is_refused(link):
    with pytest.raises(ValueError, match="--prepare takes a page of this server"):
        parse_link(link)


def test_query_keys_ignore_order_encoding_and_the_session_id():
    a = query_key({"M": [b"7"], "presenter": [b"1"], "bokeh-session-id": [b"xyz"]})
    assert a == query_key({"presenter": ["1"], "M": ["7"]})
    assert a != query_key({"M": [b"8"], "presenter": [b"1"]})
    assert query_key(None) == query_key({}) == ()


def test_a_pool_keys_itself_by_its_query_as_requests_are_keyed():
    pool = SessionPool("/sparse_regression", "presenter=1&M=7", size=3)
    assert pool.key == query_key({"M": [b"7"], "presenter": [b"1"]})
    assert pool.ready == 0 and pool.take() is None and pool.live == 0


@pytest.mark.parametrize("size", [0, -1, MAX_SIZE + 1])
def test_pool_sizes_out_of_range_are_refused(size):
    with pytest.raises(ValueError, match=f"1 to {MAX_SIZE}"):
        SessionPool("/primer", "", size)


def test_a_document_outside_a_pool_is_not_prepared():
    assert not is_prepared(None) and not is_prepared(Document())


@pytest.mark.parametrize("argv, message", [
    (["--prepare", "nope"], "no page 'nope'; the pages are"),
    (["--prepare", "primer", "--prepare-sessions", "0"], "--prepare-sessions must be 1 to"),
    (["--prepare", "https://x.org/primer"], "--prepare takes a page of this server"),
])
def test_the_command_line_refuses_a_bad_prepare_before_serving(argv, message, capsys):
    assert cli.main(["serve", "--dry-run", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_good_prepare_passes_the_command_line(capsys):
    assert cli.main(["serve", "--dry-run", "--prepare", "primer?lesson=occam&step=2", "--prepare-sessions", "5"]) == 0
    assert "panel serve" in capsys.readouterr().out
    assert session_pool.pools() == {}  # a dry run installs nothing
