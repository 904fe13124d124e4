#!/usr/bin/env python3
"""Generate README.md from nbs/index.ipynb (the book's front page), so the two never drift.

nbdev's own `nbdev_readme` needs Quarto; this script needs nothing but the notebook. Markdown cells are
copied, the nbdev front matter becomes the title and a quote, code cells (other than hidden ones) become
fenced blocks with their text outputs, and links to chapters are made relative to the repository root.

    python tools/make_readme.py          # write README.md
    python tools/make_readme.py --check  # exit 1 if README.md is out of date
"""
import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = '<!-- Generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file. -->\n\n'


def render(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding='utf-8'))
    parts = []
    for cell in nb['cells']:
        src = ''.join(cell['source']).strip('\n')
        if cell['cell_type'] == 'markdown':
            src = re.sub(r'\]\((\d\d\w*_[\w.-]+\.ipynb)\)', r'](nbs/\1)', src)
            parts.append(src)
        elif cell['cell_type'] == 'code':
            lines = src.splitlines()
            if any(re.match(r'#\|\s*(hide|export|exporti|default_exp)\b', l) for l in lines): continue
            code = '\n'.join(l for l in lines if not l.startswith('#|')).strip('\n')
            if code: parts.append(f'```python\n{code}\n```')
            for out in cell.get('outputs', []):
                text = out.get('text') or out.get('data', {}).get('text/plain')
                if text: parts.append('```\n' + ''.join(text).rstrip('\n') + '\n```')
    return HEADER + '\n\n'.join(parts) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--check', action='store_true', help='fail if README.md differs from the notebook')
    args = ap.parse_args()
    readme, text = ROOT / 'README.md', render(ROOT / 'nbs' / 'index.ipynb')
    if args.check:
        if not readme.exists() or readme.read_text(encoding='utf-8') != text:
            sys.exit('README.md is out of date with nbs/index.ipynb: run python tools/make_readme.py')
        print('README.md matches nbs/index.ipynb')
    else:
        readme.write_text(text, encoding='utf-8')


if __name__ == '__main__':
    main()
