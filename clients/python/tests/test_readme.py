"""The README's "From Python" example, run as written (only the address changes) against a live kvod."""

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]


def test_the_readme_example_runs(kvod_server):
    readme = (REPO / "README.md").read_text()
    section = readme.split("## From Python", 1)[1]
    code = re.search(r"```python[^\n]*\n(.*?)```", section, re.S).group(1)
    assert "127.0.0.1:7070" in code
    code = code.replace("127.0.0.1:7070", kvod_server.address)
    environment = dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, env=environment)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["setting None -> hello", "['a']"]
