"""The built documentation, opened in a real headless browser.

    python -m pytest docs/test_pages.py [--html docs/_build/html]

Run by ``nox -s docs`` after the build; it lives outside ``tests/`` so that
the package's test suite never collects it. It needs Debian's ``chromium`` and
``chromium-driver`` (or ``CHROMIUM``/``CHROMEDRIVER`` pointing at others) and
selenium. The pages are served over HTTP on 127.0.0.1, as a reader's browser
would get them, and every page must load with no console error and show no
reST markup as text; the API page must show the signatures of the public
functions, and the search page must find "Trilu".
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

HTML = Path(
    os.environ.get("TRILU_DOCS_HTML", Path(__file__).parent / "_build" / "html")
)
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
PAGES = sorted(
    str(p.relative_to(HTML)) for p in HTML.rglob("*.html") if "_static" not in p.parts
)
SIGNATURES = {
    "trilu.triu": "triu(m, k=0, *, fill=None, order=None, out=None)",
    "trilu.tril": "tril(m, k=0, *, fill=None, order=None, out=None)",
    "trilu.band": "band(m, lo=None, hi=None, *, fill=None, order=None, out=None)",
    "trilu.pack": "pack(m, k=0, *, upper=True, out=None)",
    "trilu.unpack": "unpack(v, n=None, m=None, k=0, *, upper=True, fill=None, out=None)",
    "trilu.mirror": "mirror(m, *, upper=True, conj=False, order=None, out=None)",
    "trilu.trilu": "trilu(input, k=0, upper=True, *, order=None, out=None)",
    "trilu.triu_indices": "triu_indices(n, k=0, m=None)",
    "trilu.set_num_threads": "set_num_threads(n=None)",
    "trilu.get_num_threads": "get_num_threads()",
    "trilu.use_in_numpy": "use_in_numpy()",
    "trilu.onnx.Trilu": "Trilu(onnx_node, run_params=None, schema=None, *, desc=None, **options)",
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The built HTML, served on 127.0.0.1 at a free port."""
    if not (HTML / "index.html").is_file():
        pytest.fail(f"no built documentation in {HTML}: run sphinx-build first")
    handler = functools.partial(_Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        pytest.fail(
            f"{CHROMIUM} or {CHROMEDRIVER} missing: apt-get install chromium chromium-driver"
        )
    options = Options()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _console_errors(browser: Any) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_pages_found() -> None:
    assert {"index.html", "api.html", "performance.html", "search.html"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_console_errors(site: str, browser: Any, page: str) -> None:
    browser.get_log("browser")  # drop what earlier pages left
    browser.get(f"{site}/{page}")
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return document.readyState") == "complete"
    )
    assert browser.find_element(By.TAG_NAME, "h1").is_displayed()
    errors = _console_errors(browser)
    assert not errors, f"{page}: {errors}"
    broken = browser.execute_script(
        "return Array.from(document.images)"
        ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert not broken, f"{page}: images that did not load: {broken}"
    # reST does not nest inline markup: ``code`` inside **bold** is shown with
    # its backticks. Prose shows no markup; code blocks, literals, signatures
    # and parameter names (``**options``) aside.
    prose = browser.execute_script(
        "const main = document.querySelector('main').cloneNode(true);"
        "main.querySelectorAll('pre, code, .sig, .field-list strong')"
        ".forEach(e => e.remove());"
        "return main.innerText;"
    )
    leftovers = [line for line in prose.splitlines() if "``" in line or "**" in line]
    assert not leftovers, f"{page}: markup shown as text: {leftovers}"


def test_api_page_shows_signatures(site: str, browser: Any) -> None:
    browser.get(f"{site}/api.html")
    for name, signature in SIGNATURES.items():
        element = browser.find_element(By.ID, name)
        assert element.is_displayed(), name
        text = " ".join(element.text.split())
        assert signature in text, f"{name}: {text!r}"


def test_search_finds_trilu(site: str, browser: Any) -> None:
    browser.get(f"{site}/search.html?q=Trilu")
    WebDriverWait(browser, 30).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "#search-results li")
    )
    results = browser.find_elements(By.CSS_SELECTOR, "#search-results li")
    titles = " ".join(r.text for r in results)
    assert "trilu" in titles.lower()
    links = [r.find_element(By.TAG_NAME, "a").get_attribute("href") for r in results]
    assert any(link.split("/")[-1].startswith("api.html") for link in links), links
    assert not _console_errors(browser)
