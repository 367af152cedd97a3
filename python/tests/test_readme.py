"""The README's Python quick start is examples/quickstart.py, and it runs."""

import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "python" / "examples" / "quickstart.py"


def test_readme_python_block_is_the_quickstart():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```python\n") + len("```python\n")
    block = readme[start : readme.index("```\n", start)]
    assert block == QUICKSTART.read_text()


def test_quickstart_runs(capsys):
    runpy.run_path(str(QUICKSTART), run_name="__main__")
    assert "and back" in capsys.readouterr().out
