"""The library look on real programs of this host: glibc's ``ldd`` on real binaries (one built
here against a library then removed, so its ``not found`` line is the loader's own), and the
look's script run by ``sh`` here as the process runtime runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from proofdiff.core.library_probe import _SCRIPT, CUDA_LIBRARY, parse_ldd, parse_look
from proofdiff.oracles.libraries import problems

LDD = shutil.which("ldd")
pytestmark = pytest.mark.skipif(LDD is None, reason="no ldd on this host")


def _ldd(path: Path | str) -> str:
    return subprocess.run([str(LDD), str(path)], capture_output=True, text=True,
                          timeout=30).stdout


def test_every_library_of_a_real_binary_is_found() -> None:
    got = parse_ldd(_ldd(shutil.which("sh") or "/bin/sh"))
    assert got.dynamic and not got.missing and not got.versions
    assert "libc.so.6" in got.found and got.found["libc.so.6"].startswith("/")


def test_a_library_removed_after_linking_is_reported_missing(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to link a program against a library")
    (tmp_path / "gone.c").write_text("int gone(void) { return 7; }\n")
    (tmp_path / "main.c").write_text("int gone(void);\nint main(void) { return gone(); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "libpdxgone.so"),
                    str(tmp_path / "gone.c")], check=True, timeout=60)
    subprocess.run([cc, "-o", str(tmp_path / "prog"), str(tmp_path / "main.c"),
                    f"-L{tmp_path}", "-lpdxgone"], check=True, timeout=60)
    (tmp_path / "libpdxgone.so").unlink()
    text = _ldd(tmp_path / "prog")
    got = parse_ldd(text)
    assert got.missing == ("libpdxgone.so",), text
    assert "libc.so.6" in got.found


def test_a_script_is_not_a_dynamic_executable(tmp_path: Path) -> None:
    script = tmp_path / "entry.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    text = subprocess.run([str(LDD), str(script)], capture_output=True, text=True,
                          timeout=30)
    got = parse_ldd(text.stdout + text.stderr)
    assert not got.dynamic and not got.missing


def test_the_look_names_each_program_and_where_it_sought_the_cuda_library() -> None:
    env = {**os.environ, "PROOFDIFF_CUDA_CHECK": "1"}
    out = subprocess.run(["sh", "-c", _SCRIPT, "sh", "sh", "no-such-program-pdx"], env=env,
                         capture_output=True, text=True, timeout=60).stdout
    look = parse_look(out, {"sh": "daemon", "no-such-program-pdx": "bench tool"}, "this host",
                      cuda_checked=True)
    (sh, absent) = look.programs
    assert sh.role == "daemon" and sh.path and sh.ldd is not None and not sh.ldd.missing
    assert absent.role == "bench tool" and absent.path == ""
    assert "/usr/lib/x86_64-linux-gnu" in look.cuda_dirs
    bad = problems(look)
    assert "no-such-program-pdx (the bench tool): not found on this host" in bad
    has_cuda = any(Path(d, CUDA_LIBRARY).exists() for d in look.cuda_dirs)
    assert (CUDA_LIBRARY in " ".join(bad)) is (not has_cuda and not look.cuda)


def test_a_look_cut_short_is_an_error_not_a_pass() -> None:
    with pytest.raises(Exception, match="ended without its last line"):
        parse_look("@@program sh /bin/sh\n", {}, "this host", cuda_checked=False)
