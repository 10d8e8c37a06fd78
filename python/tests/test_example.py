"""examples/python/example.py is the README's Python example, verbatim, and it runs."""
import os
import re
import subprocess
import sys

import pytest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "python", "example.py")


def readme_python_block():
    text = open(os.path.join(SOURCE_DIR, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README.md should have exactly one ```python block"
    return blocks[0]


def test_readme_example_is_examples_python_example():
    assert readme_python_block() == open(EXAMPLE).read()


def test_example_runs():
    spv = os.environ.get("ZEX_EXAMPLE_SPV")
    if not spv:
        pytest.skip("ZEX_EXAMPLE_SPV is not set (the CTest entry zex_python sets it)")
    r = subprocess.run([sys.executable, EXAMPLE, spv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "A BoundsError was thrown in kernel 'vadd'" in r.stdout, r.stdout
    assert "global_id" in r.stdout or "work-item" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("ok"), r.stdout
