#!/usr/bin/env python3
"""Execute notebooks in place so the book's pages carry real outputs (plots included), then clean them.

    python tools/execute_notebooks.py [nbs/03_generate.ipynb ...]    (default: every notebook in nbs/)

Like `jupyter nbconvert --execute --inplace`, but cells marked `#| eval: false` are skipped, as nbdev_test
and Quarto skip them. Slow cells run (their outputs are the plots); `#| gpu` cells are skipped unless
--gpu is given; `#| train` cells (they retrain the packaged demo models) keep their saved outputs
unless --train is given; with --keep bench, cells flagged `#| bench` are not run and keep their saved
outputs; with --keep-output N, cell N (an index: it shifts when cells are added) runs but keeps its
saved output: an output measured on another machine, say one whose instruction set this one lacks, when
the cells after it need its state; with --run N, cell N runs even though its flag is kept (one `#| train`
cell whose inputs the cells before it make, say).
A cell that raises stops the run and nothing is written.
"""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


class SkippingClient(NotebookClient):
    "Runs every code cell except those with `#| eval: false` (and `#| gpu` ones when asked)."
    skip_flags: tuple = ()
    keep_flags: tuple = ()      # not run, their saved outputs kept (say, `bench` cells)
    keep_outputs: tuple = ()    # cell indices run but their saved outputs kept
    run_anyway: tuple = ()      # cell indices run whatever their flags keep

    def _skip(self, cell) -> bool:
        src = cell.source
        if re.search(r'^#\|\s*eval:\s*false', src, re.M): return True
        return any(re.search(rf'^#\|\s*{flag}\b', src, re.M) for flag in self.skip_flags)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        kept = any(re.search(rf'^#\|\s*{flag}\b', cell.source, re.M) for flag in self.keep_flags)
        if cell.cell_type == 'code' and kept and cell_index not in self.run_anyway:
            return cell
        if cell.cell_type == 'code' and self._skip(cell):
            cell.outputs = []
            return cell
        if cell_index in self.keep_outputs:
            saved = cell.outputs
            await super().async_execute_cell(cell, cell_index, execution_count, store_history)
            cell.outputs = saved
            return cell
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)


def merge_streams(nb) -> None:
    "Adjacent stdout (or stderr) outputs of a cell as one: a cell's printing shows as one block, however it was flushed."
    for cell in nb.cells:
        merged = []
        for out in cell.get('outputs', []):
            prev = merged[-1] if merged else None
            if (out.output_type == 'stream' and prev is not None and prev.output_type == 'stream'
                    and prev.name == out.name):
                prev.text += out.text
            else: merged.append(out)
        if 'outputs' in cell: cell.outputs = merged


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('notebooks', nargs='*', type=Path)
    ap.add_argument('--gpu', action='store_true', help='also run #| gpu cells')
    ap.add_argument('--timeout', type=int, default=1800, help='seconds per cell')
    ap.add_argument('--keep', action='append', default=[], metavar='FLAG',
                    help='do not run cells with this flag (say, bench): keep their saved outputs')
    ap.add_argument('--train', action='store_true',
                    help='also run #| train cells (they retrain the packaged demo models: many minutes); '
                         'without it they are kept like --keep train')
    ap.add_argument('--keep-output', action='append', default=[], type=int, metavar='N',
                    help='run cell N (its index in the notebook) but keep its saved output')
    ap.add_argument('--run', action='append', default=[], type=int, metavar='N',
                    help='run cell N (its index in the notebook) even if a kept flag marks it')
    args = ap.parse_args()
    paths = args.notebooks or sorted((ROOT / 'nbs').glob('[0-9]*.ipynb'))
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = SkippingClient(nb, timeout=args.timeout, kernel_name='python3',
                                resources={'metadata': {'path': str(path.parent)}})
        client.skip_flags = () if args.gpu else ('gpu',)
        client.keep_flags = tuple(args.keep) + (() if args.train else ('train',))
        client.keep_outputs = tuple(args.keep_output)
        client.run_anyway = tuple(args.run)
        print(f'executing {path} ...', flush=True)
        client.execute()
        merge_streams(nb)
        nbformat.write(nb, path)
    subprocess.run(['nbdev_clean'], cwd=ROOT, check=True)


if __name__ == '__main__':
    sys.exit(main())
