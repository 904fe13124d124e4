#!/usr/bin/env python3
"""Render the book to a static website without Quarto: nbdev's notebook processing, then nbconvert.

    python tools/render_site.py [--out _site]     # then browse: python -m http.server -d _site

Every notebook in nbs/ (index.ipynb first, then in filename order) goes through the processors `nbdev_docs` runs
before Quarto: the `# Title` / `> description` cell becomes front matter, `#| hide` and `#| export` cells lose
their source, exported names get a `show_doc`, names in backticks link to their docs, and directives become
Quarto cell options. This script then does what Quarto does with those options (`include`, `echo` and `output`
set to false), converts each notebook with nbconvert (plots are embedded PNGs) and wraps it in a page with the
list of chapters and previous/next links. Pages keep Quarto's names (`05a_engine.ipynb` -> `engine.html`).
The interactive figures' library, `plotly.min.js`, is copied beside the pages from the installed `plotly`.

Nothing is executed but what nbdev runs to document exported code: saved outputs are shown as saved. An error
output is rendered like any other output (the site test fails on it) and reported on stderr.
"""
import argparse
import ast
import html
import os
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote

import nbformat
from execnb.nbio import nb2str, read_nb
from fastcore.basics import str2bool
from jinja2 import DictLoader
from nbconvert import HTMLExporter
from nbdev.config import get_config
from nbdev.processors import FilterDefaults, _do_eval, _show_docs, exec_show_docs
from pygments.formatters import HtmlFormatter

ROOT = Path(__file__).resolve().parent.parent
NBS = ROOT / 'nbs'

# nbconvert's body-only template, plus Quarto's `code-fold` (nbdev folds the source of `#| exports` cells).
TEMPLATE = """{%- extends 'basic/index.html.j2' -%}
{% block input_group -%}
{%- if cell.metadata.code_fold -%}
<details class="code-fold"{{ ' open' if cell.metadata.code_fold == 'show' }}>
<summary>{{ cell.metadata.code_summary or 'Code' }}</summary>{{ super() }}</details>
{%- else -%}{{ super() }}{%- endif -%}
{%- endblock input_group %}
"""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title_text} – {site}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="pygments.css">
<link rel="stylesheet" href="styles.css">
</head>
<body class="site-page">
<header class="site-header"><a href="index.html">{site}</a></header>
<div class="site-body">
<nav class="site-nav" aria-label="Chapters"><ol>
{nav}
</ol></nav>
<main class="site-main">
<h1 class="title">{title}</h1>
<p class="description">{description}</p>
{body}
<nav class="site-pager" aria-label="Previous and next chapter">{pager}</nav>
</main>
</div>
</body>
</html>
"""


def chapters(nbs: Path = NBS) -> list[Path]:
    "The book's notebooks in reading order: index.ipynb, then by filename (names starting with _ or . skipped)"
    notebooks = [p for p in nbs.glob('*.ipynb') if not p.name.startswith(('_', '.'))]
    return sorted(notebooks, key=lambda p: (p.name != 'index.ipynb', p.name))


def _runs_for_docs(cell) -> bool:
    "Is `cell` exported code, `show_doc` or imports only, i.e. what `show_doc` needs to have run?"
    trees = cell.parsed_() or []
    return bool(cell.directives_.keys() & {'export', 'exports', 'exporti', 'exec_doc'} or _show_docs(trees)
                or all(isinstance(t, (ast.Import, ast.ImportFrom)) for t in trees))


class exec_doc_cells(exec_show_docs):
    """nbdev's `exec_show_docs` limited to the cells docs need. nbdev also runs every cell with an import in it,
    which would rerun benchmarks and replace their saved plots. A failing `show_doc` keeps its error output."""
    def __call__(self, cell):
        if not self.nb.has_docs_ or not hasattr(self, 'k'): return
        if str2bool(getattr(self.nb, 'frontmatter_', {}).get('skip_showdoc', False)): return
        if _runs_for_docs(cell) and _do_eval(cell): self.k.cell(cell)


class SiteProcessors(FilterDefaults):
    "nbdev's processors for docs, with `exec_doc_cells` in place of `exec_show_docs`"
    def base_procs(self): return [exec_doc_cells if p is exec_show_docs else p for p in super().base_procs()]


def process(path: Path):
    "`path` after nbdev's docs processing (an `execnb` notebook; its front matter is in `.frontmatter_`)"
    nb = read_nb(path)
    SiteProcessors()(nb)
    return nb


_OPTION = re.compile(r'#\|\s*([\w-]+):\s*(.*?)\s*$')


def apply_cell_options(cell) -> bool:
    "Strip the leading `#| key: value` lines of a code cell and apply them as Quarto would; False: drop the cell"
    lines, options = cell.source.splitlines(), {}
    while lines and (m := _OPTION.match(lines[0])):
        options[m[1]] = m[2].strip('\'"')
        lines.pop(0)
    cell.source = '\n'.join(lines)
    if options.get('include') == 'false': return False
    if options.get('echo') == 'false' or not cell.source.strip(): cell.metadata['transient'] = {'remove_source': True}
    if options.get('output') == 'false': cell.outputs = []
    if 'code-fold' in options:
        cell.metadata.update(code_fold=options['code-fold'], code_summary=options.get('code-summary'))
    return True


_PANDOC_LINK = re.compile(r'\[([^\]]*)\]\(([^)\s]+)\)\{([^}]*)\}')   # [text](url){target="_blank" ...}


def to_nbformat(nb) -> nbformat.NotebookNode:
    "The processed notebook as nbformat wants it, without front matter and with Quarto's cell options applied"
    nb = nbformat.reads(nb2str(nb), as_version=4)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == 'raw' and cell.source.startswith('---'): continue   # front matter: title block
        if cell.cell_type == 'code' and not apply_cell_options(cell): continue
        if cell.cell_type == 'markdown': cell.source = _PANDOC_LINK.sub(r'<a href="\2" \3>\1</a>', cell.source)
        for out in cell.get('outputs', []):
            md = out.get('data', {}).get('text/markdown')
            if md: out.data['text/markdown'] = _PANDOC_LINK.sub(r'<a href="\2" \3>\1</a>', ''.join(md))
        cells.append(cell)
    nb.cells = cells
    return nb


def error_outputs(nb) -> list[str]:
    "One line per error output in `nb`"
    return [f"cell {i}: {out.get('ename')}: {out.get('evalue')}" for i, cell in enumerate(nb.cells)
            for out in cell.get('outputs', []) if out.get('output_type') == 'error']


def pandoc_id(text: str) -> str:
    "The id Quarto (Pandoc) gives a heading, which nbdev's API links point to"
    words = re.sub(r'[^\w\s.-]', '', text.lower()).split()
    return re.sub(r'^[^a-z]+', '', '-'.join(words)) or 'section'


def fix_links(body: str, pages: dict[str, str], docs_url: str) -> str:
    "Links to notebooks and to the published docs become links between pages; heading ids become Quarto's"
    def page(m):
        name, anchor = m[1], m[2] or ''
        return f'href="{pages.get(name, name)}{anchor}"'
    body = re.sub(r'href="([^":/#]+\.ipynb)(#[^"]*)?"', page, body)
    body = body.replace(f'href="{docs_url}', 'href="')
    for old in re.findall(r'<h[1-6] id="([^"]+)"', body):
        new = pandoc_id(unquote(old).replace('-', ' '))
        body = body.replace(f'id="{old}"', f'id="{new}"').replace(f'href="#{old}"', f'href="#{new}"')
    return body


def inline_md(text: str) -> str:
    "Escaped text with `code` spans, for titles and descriptions"
    return re.sub(r'`([^`]+)`', r'<code>\1</code>', html.escape(text))


def navigation(toc: list[dict], i: int) -> tuple[str, str]:
    "The chapter list with chapter `i` marked current, and the links to its previous and next chapters"
    def link(j, text, attrs=''): return f'<a href="{toc[j]["page"]}"{attrs}>{text}</a>'
    items = [f'<li class=active>{link(j, inline_md(c["title"]), " aria-current=page")}</li>' if j == i
             else f'<li>{link(j, inline_md(c["title"]))}</li>' for j, c in enumerate(toc)]
    pager = [link(i - 1, f'← {inline_md(toc[i - 1]["title"])}', ' class="prev" rel="prev"')] if i > 0 else []
    if i + 1 < len(toc): pager.append(link(i + 1, f'{inline_md(toc[i + 1]["title"])} →', ' class="next" rel="next"'))
    return '\n'.join(items), ''.join(pager)


def plotly_js() -> Path:
    "plotly.js as the installed `plotly` package ships it (the dev install has it)"
    try: import plotly
    except ImportError: sys.exit("render_site.py needs plotly for the interactive figures: pip install -e '.[dev]'")
    return Path(plotly.__file__).parent / 'package_data' / 'plotly.min.js'


def render(out: Path) -> list[str]:
    "Write the site to `out`; return the error outputs found, one line each"
    cfg = get_config()
    os.environ['IN_TEST'] = '1'   # as nbdev sets while processing notebooks
    processed = [(path, process(path)) for path in chapters()]
    toc = [{'page': nb.frontmatter_['output-file'], 'title': nb.frontmatter_.get('title', path.stem),
            'description': nb.frontmatter_.get('description', '')} for path, nb in processed]
    pages = {path.name: c['page'] for (path, _), c in zip(processed, toc)}
    docs_url = f"{cfg.doc_host}{cfg.doc_baseurl}".rstrip('/') + '/'
    # Plots (image/png outputs) are always embedded as data URIs. `embed_images` would also embed images linked
    # from markdown, but it breaks inline HTML (`<a ...>text</a>` loses its text), and the book links none.
    exporter = HTMLExporter(extra_loaders=[DictLoader({'site.html.j2': TEMPLATE})], template_file='site.html.j2',
                            exclude_input_prompt=True, exclude_output_prompt=True)
    out.mkdir(parents=True, exist_ok=True)
    errors = []
    for i, ((path, nb), chapter) in enumerate(zip(processed, toc)):
        nb = to_nbformat(nb)
        errors += [f'{path.name} {e}' for e in error_outputs(nb)]
        body, _ = exporter.from_notebook_node(nb)
        nav, pager = navigation(toc, i)
        (out / chapter['page']).write_text(PAGE.format(
            site=html.escape(cfg.title), title_text=html.escape(chapter['title'].replace('`', '')),
            title=inline_md(chapter['title']), description=inline_md(chapter['description']),
            nav=nav, pager=pager, body=fix_links(body, pages, docs_url)), encoding='utf-8')
    shutil.copy(NBS / 'styles.css', out / 'styles.css')
    shutil.copy(plotly_js(), out / 'plotly.min.js')      # the interactive figures' library, served with the site
    (out / 'pygments.css').write_text(HtmlFormatter().get_style_defs('.highlight'), encoding='utf-8')
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', type=Path, default=ROOT / '_site', help='output directory (default: _site)')
    args = ap.parse_args()
    out = args.out.resolve()
    os.chdir(ROOT)   # nbdev's processors find settings.ini from the working directory
    errors = render(out)
    for e in errors: print(f'error output in {e}', file=sys.stderr)
    print(f'wrote {out}: index.html and {len(chapters()) - 1} chapters')


if __name__ == '__main__':
    main()
