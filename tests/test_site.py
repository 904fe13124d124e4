"""The book's website. The Quarto config's sidebar lists every notebook in nbs/, in order. The static site of
`tools/render_site.py` is rendered, served as `python -m http.server` would, and read in headless Chromium: every
page and stylesheet loads, every plot is an image that displays, every page lists every chapter with the current
one marked and links to its neighbours, links go to pages that exist, and no page shows an error output or a
`#|` directive in its code.

Needs Chromium and its driver from Debian's packages (`apt-get install -y chromium chromium-driver`) and
`pip install selenium`; selenium is pointed at the system driver and downloads nothing.
"""
import functools
import json
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / 'nbs'


def notebooks() -> list[Path]:
    "The book's notebooks in reading order: index.ipynb, then by filename"
    return sorted((p for p in NBS.glob('*.ipynb') if not p.name.startswith(('_', '.'))),
                  key=lambda p: (p.name != 'index.ipynb', p.name))


NOTEBOOKS = notebooks()


def page_of(nb: Path) -> str:
    "nbdev's (and Quarto's) page name: `05a_engine.ipynb` -> `engine.html`"
    return re.sub(r'^\d+[a-zA-Z0-9]*_', '', nb.stem.lower()) + '.html'


def title_of(nb: Path) -> str:
    "The `# Heading` of the first markdown cell, as the navigation shows it (backticks become code)"
    cell = next(c for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'markdown')
    return re.search(r'^#\s+(.+?)\s*$', ''.join(cell['source']), re.MULTILINE)[1].replace('`', '')


def plots_of(nb: Path) -> int:
    "How many image/png outputs a reader sees: those of code cells that are not hidden"
    hidden = re.compile(r'^#\|\s*(?:(?:hide|export|exporti|default_exp)\b|(?:include|output):\s*false)', re.MULTILINE)
    cells = [c for c in json.loads(nb.read_text())['cells']
             if c['cell_type'] == 'code' and not hidden.search(''.join(c['source']))]
    return sum('image/png' in o.get('data', {}) for c in cells for o in c.get('outputs', []))


def test_quarto_sidebar_lists_every_chapter():
    quarto = yaml.safe_load((NBS / '_quarto.yml').read_text())
    listed = quarto['website']['sidebar']['contents']
    assert listed == [nb.name for nb in NOTEBOOKS], \
        'nbs/_quarto.yml: website.sidebar.contents must list every notebook in nbs/, index.ipynb first, then by name'
    assert 'sidebar.yml' not in quarto.get('metadata-files', []), \
        "the sidebar is the one in _quarto.yml: don't merge nbdev's generated sidebar.yml"


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    "The site rendered into a temporary directory, served over HTTP; yields (base URL, site dir, failed requests)"
    out = tmp_path_factory.mktemp('site')
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'render_site.py'), '--out', str(out)],
                       check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f'render_site.py failed:\n{r.stdout}\n{r.stderr}'
    failed = []

    class Handler(SimpleHTTPRequestHandler):
        def log_request(self, code='-', size='-'):
            if int(code) >= 400: failed.append(f'{self.path}: HTTP {code}')
        def log_message(self, *args): pass

    server = ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Handler, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{server.server_port}/', out, failed
    server.shutdown()


PAGE_FACTS = """
const text = e => e.textContent.trim();
return {
  ready: document.readyState,
  title: document.title,
  images: [...document.images].map(i => ({src: i.src.slice(0, 40), complete: i.complete, width: i.naturalWidth})),
  plots: document.querySelectorAll('.output_png img').length,
  nav: [...document.querySelectorAll('.site-nav a')].map(a => [a.getAttribute('href'), text(a)]),
  current: [...document.querySelectorAll('.site-nav [aria-current=page]')].map(a => a.getAttribute('href')),
  prev: document.querySelector('.site-pager a[rel=prev]')?.getAttribute('href') ?? null,
  next: document.querySelector('.site-pager a[rel=next]')?.getAttribute('href') ?? null,
  links: [...document.querySelectorAll('a[href]')].map(a => a.href).filter(h => h.startsWith(location.origin)),
  errors: [...document.querySelectorAll('.output_error')].map(e => text(e).slice(-300)),
  tracebacks: document.body.innerText.includes('Traceback (most recent call last)'),
  directives: [...document.querySelectorAll('.input_area')].map(text).filter(s => /^#\\|/m.test(s)),
};
"""

WIDTH = "return [document.documentElement.scrollWidth, window.innerWidth];"
CUT = """return [...document.querySelectorAll('.site-main *')]
  .filter(e => e.scrollWidth > e.clientWidth + 1 && ['hidden', 'clip'].includes(getComputedStyle(e).overflowX))
  .map(e => e.tagName + ': ' + e.textContent.trim().slice(0, 60));"""
UNWRAPPED = """return [...document.querySelectorAll('.site-main .input_area pre')]
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.trim().slice(0, 60));"""


@pytest.mark.parametrize('i', range(len(NOTEBOOKS)), ids=[nb.stem for nb in NOTEBOOKS])
def test_page(browser, site, i):
    base, out, failed = site
    nb, page = NOTEBOOKS[i], page_of(NOTEBOOKS[i])
    failed.clear()
    browser.get(base + page)
    facts = browser.execute_script(PAGE_FACTS)
    assert facts['ready'] == 'complete' and facts['title'].startswith(title_of(nb)), facts['title']
    assert not failed, f'{page}: requests that failed: {failed}'
    hidden = [img for img in facts['images'] if not (img['complete'] and img['width'] > 0)]
    assert not hidden, f'{page}: images that do not display: {hidden}'
    assert facts['plots'] == plots_of(nb), f'{page}: {facts["plots"]} plots shown, {plots_of(nb)} in {nb.name}'
    chapters = [[page_of(n), title_of(n)] for n in NOTEBOOKS]
    assert facts['nav'] == chapters, f'{page}: the navigation is not every chapter in order'
    assert facts['current'] == [page], f'{page}: the navigation marks {facts["current"]} as current'
    assert facts['prev'] == (page_of(NOTEBOOKS[i - 1]) if i else None)
    assert facts['next'] == (page_of(NOTEBOOKS[i + 1]) if i + 1 < len(NOTEBOOKS) else None)
    missing = {h for h in facts['links'] if not (out / h[len(base):].split('#')[0]).is_file()}
    assert not missing, f'{page}: links to pages that do not exist: {sorted(missing)}'
    assert not facts['errors'] and not facts['tracebacks'], f'{page} shows an error output: {facts["errors"]}'
    assert not facts['directives'], f'{page} shows #| directives in its code: {facts["directives"]}'
    try:                                 # the window's width, then a narrow one: tables and outputs scroll in boxes, code wraps
        for size in (1280, 800):
            browser.set_window_size(size, 900)
            width, window = browser.execute_script(WIDTH)
            assert width <= window, f'{page} is {width} px wide in a {window} px window'
            cut, unwrapped = browser.execute_script(CUT), browser.execute_script(UNWRAPPED)
            assert not cut, f'{page}: boxes that cut what they hold at {window} px: {cut}'
            assert not unwrapped, f'{page}: code that does not wrap at {window} px: {unwrapped}'
    finally: browser.set_window_size(1280, 900)


def test_no_list_or_heading_starts_inside_a_sentence():
    """Every notebook's markdown, parsed as CommonMark: no list and no heading starts on a line that continues the
    paragraph before it. A line break before `+ 1` or `2. ` makes the rest of a sentence a list item in CommonMark,
    and pandoc (Quarto's parser), which wants a blank line before a list, renders the same source differently."""
    from markdown_it import MarkdownIt
    md, bad = MarkdownIt('commonmark'), []
    for nb in NOTEBOOKS:
        for cell in json.loads(nb.read_text())['cells']:
            if cell['cell_type'] != 'markdown': continue
            src = ''.join(cell['source'])
            lines = src.split('\n')
            for tok in md.parse(src):
                if tok.type not in ('bullet_list_open', 'ordered_list_open', 'heading_open') or tok.level or not tok.map:
                    continue
                before = lines[tok.map[0] - 1] if tok.map[0] else ''
                if before.strip() and not before.lstrip().startswith('#'):
                    bad.append(f"{nb.name}: {before.strip()[-50:]!r} / {lines[tok.map[0]][:50]!r}")
    assert not bad, '\n'.join(bad)


def test_interactive_figures_respond(browser, site):
    """Every interactive figure of the site is drawn by the site's own plotly.js, and answers its controls: moving a
    slider shows another step, clicking a legend entry hides a trace."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait
    base, out, failed = site
    pages = [p.name for p in sorted(out.glob('*.html')) if 'class="interactive-figure"' in p.read_text(encoding='utf-8')]
    assert pages, 'no page has an interactive figure'
    seen = 0
    for page in pages:
        browser.get(base + page)
        ids = browser.execute_script("return [...document.querySelectorAll('.interactive-figure')].map(e => e.id)")
        for fid in ids:
            gd = f"document.getElementById('{fid}')"
            WebDriverWait(browser, 30).until(lambda d: d.execute_script(f"return !!{gd}._fullLayout"))
            fills = f"return [...{gd}.querySelectorAll('.scatterlayer .trace')].map(t => [...t.querySelectorAll('.point')].map(p => p.style.fill).join())"
            before, active = browser.execute_script(fills), browser.execute_script(f"return ({gd}.layout.sliders || [{{}}])[0].active")
            rails = browser.find_elements('css selector', f'#{fid} .slider-rail-rect')
            for rail in rails:                                    # click the slider at three quarters of its length
                browser.execute_script('arguments[0].scrollIntoView({block: "center"})', rail)
                ActionChains(browser).move_to_element_with_offset(rail, rail.size['width'] // 4, 0).click().perform()
                WebDriverWait(browser, 10).until(lambda d: d.execute_script(f"return {gd}.layout.sliders[0].active") != active)
                assert browser.execute_script(fills) != before, f'{page} #{fid}: the slider moved, the figure did not change'
            legend = browser.find_elements('css selector', f'#{fid} .legend .traces')
            if len(legend) > 1:                                   # click the first legend entry: its trace hides
                legend[0].click()
                WebDriverWait(browser, 10).until(lambda d: d.execute_script(f"return {gd}.data[0].visible") == 'legendonly')
            assert rails or len(legend) > 1, f'{page} #{fid} has no control'
            seen += 1
    assert not failed, f'requests that failed: {failed}'
    print(f'{seen} interactive figures on {len(pages)} pages')
