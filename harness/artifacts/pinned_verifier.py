"""Step ``verifier``: the pinned verifier, ``proofdiff/verifier:<key12>``, that no candidate can change.

The pin is ``verifier.lock`` at the repository root: the git **tree id** of the refprover source
(``git rev-parse <commit>:targets/refprover``), which is content-addressed, so the pin names the
exact bytes of the source whatever the working tree holds. The step:

1. extracts that tree from the repository's object store (``git archive``) into the cache;
2. if the working tree's crate holds exactly those bytes, reuses the ``verify`` binary that the
   main build just made from them (same source, same Cargo.lock, same toolchain); otherwise
   builds ``verify`` from the extracted source into its own target dir (seeded from the main one,
   so the dependencies are not rebuilt);
3. makes an image holding only that binary, tagged by the image's content key (over the base
   image, the Dockerfile with the pinned tree's label, and the binary's bytes). No other tag is
   ever pointed at it, and no build re-points a shared tag.

A candidate image built from a changed tree therefore brings its own ``verify``, but proofdiff
never runs it to judge proofs: the pinned one does, recorded in the evidence by image id.
Change the pin on purpose with ``proofdiff build --pin-verifier`` (writes the tree of
HEAD).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import locked, publish_dir, scratch_dir
from proofdiff.artifacts.engine import find_image
from proofdiff.artifacts.binaries import build_binaries
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.content_keys import file_digest, image_key

__all__ = ["PIN_FILE", "VERIFIER_REPO", "Pin", "PinnedVerifier", "ensure_pinned_verifier",
           "read_pin", "repo_root", "write_pin"]

PIN_FILE = "verifier.lock"
VERIFIER_REPO = "proofdiff/verifier"
#: Deadline of git archive and of the image build, seconds.
STEP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Pin:
    """``verifier.lock``: ``source`` (the crate's path in the repo), ``tree`` (its git tree id,
    40 hex), ``commit`` (where it was taken from; for people, not used to build)."""

    source: str
    tree: str
    commit: str
    path: Path


@dataclass(frozen=True)
class PinnedVerifier:
    """The pinned verifier as built: ``tag`` and ``image_id`` (``sha256:...``) of its image,
    the ``tree`` it was built from, the ``binary`` on this host, and ``how`` it came to be
    (``reused main build`` when the working tree equals the pin, else ``built from pin``)."""

    tag: str
    image_id: str
    tree: str
    binary: Path
    how: str


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                          timeout=STEP_TIMEOUT_S, check=False)


def repo_root(crate_dir: Path) -> Path:
    """The git work tree holding ``crate_dir``.

    Raises:
        BuildError: ``crate_dir`` is not inside a git checkout (the pin names a git tree).
    """
    res = _git(crate_dir, "rev-parse", "--show-toplevel")
    if res.returncode != 0:
        raise BuildError("verifier", f"{crate_dir} is not in a git checkout: "
                         f"{res.stderr.decode(errors='replace').strip()}",
                         "build from a proofdiff git clone: the pinned verifier is a git tree")
    return Path(res.stdout.decode().strip())


def read_pin(repo: Path) -> Pin:
    """Read ``<repo>/verifier.lock``.

    Raises:
        BuildError: the file is missing or malformed (file and line in the cause).
    """
    path = repo / PIN_FILE
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BuildError("verifier", f"no {path}: the verifier is not pinned",
                         "pin it: `proofdiff build --pin-verifier`, then commit "
                         f"{PIN_FILE}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BuildError("verifier", f"{path} is not TOML: {exc}",
                         f"fix {path}, or rewrite it with `proofdiff build "
                         "--pin-verifier`") from None
    tree = str(doc.get("tree", ""))
    if len(tree) != 40 or any(c not in "0123456789abcdef" for c in tree):
        raise BuildError("verifier", f"{path}: `tree` must be a 40-hex git tree id, got "
                         f"{tree!r}", "rewrite it with `proofdiff build --pin-verifier`")
    return Pin(source=str(doc.get("source", "targets/refprover")), tree=tree,
               commit=str(doc.get("commit", "")), path=path)


def _extract(repo: Path, root: Path, pin: Pin, log: build_steps.Log) -> Path:
    final = root / "verifier" / f"src-{pin.tree[:16]}"
    if (final / "Cargo.toml").is_file():
        return final
    res = _git(repo, "archive", "--format=tar", pin.tree)
    if res.returncode != 0:
        raise BuildError("verifier", f"git cannot read the pinned tree {pin.tree} ({pin.path}): "
                         f"{res.stderr.decode(errors='replace').strip()}",
                         "fetch the full history (`git fetch --unshallow`), or re-pin with "
                         "`proofdiff build --pin-verifier`")
    tmp = scratch_dir(root, "verifier-src-")
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
        tar.extractall(tmp, filter="data")
    log(f"  verifier: extracted tree {pin.tree[:12]} ({len(res.stdout) / 1e3:.0f} kB)")
    publish_dir(tmp, final)
    return final


def _tree_files(base: Path) -> dict[str, str]:
    return {p.relative_to(base).as_posix(): file_digest(p) for p in sorted(base.rglob("*"))
            if p.is_file() and "target" not in p.relative_to(base).parts}


def _binary(crate_dir: Path, src: Path, root: Path, main_verify: Path, pin: Pin,
            log: build_steps.Log) -> tuple[Path, str]:
    if _tree_files(src) == _tree_files(crate_dir) and main_verify.is_file():
        return main_verify, "reused main build (the working tree equals the pin)"
    target = root / "verifier-target"
    seed_target(root / "cargo-target", target, log)
    bins, _ = build_binaries(src, root, log=log, target_dir=target, only=("verify",),
                             step="verifier")
    keep = root / "verifier" / f"bin-{pin.tree[:16]}" / "verify"
    keep.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bins["verify"], keep)
    return keep, "built from pin"


def seed_target(main_target: Path, target: Path, log: build_steps.Log) -> None:
    """Copy the main cargo target dir to ``target`` once, so that the pinned build does not
    compile its dependencies again (nothing when ``target`` exists or there is no main one).

    Raises:
        BuildError: ``target`` lies inside ``main_target`` (or is it): a copy would never end.
    """
    if target.exists() or not main_target.is_dir():
        return
    if target.resolve().is_relative_to(main_target.resolve()):
        raise BuildError("verifier", f"the verifier's cargo target {target} lies inside the main "
                         f"one {main_target}: seeding it would copy it into itself",
                         "report this as a bug of proofdiff; remove the folder meanwhile")
    log(f"  verifier: seeding {target} from {main_target} (dependencies are not rebuilt)")
    shutil.copytree(main_target, target, symlinks=True)


def ensure_pinned_verifier(client: Any, root: Path, base: Any, crate_dir: Path,
                           main_verify: Path, *, log: build_steps.Log
                           ) -> tuple[PinnedVerifier, StepReport]:
    """Build or reuse the pinned verifier image (module docstring).

    Args:
        client: a docker client. root: the cache root. base: the local base image.
        crate_dir: the working tree's refprover crate (the pin is found from its repo).
        main_verify: the ``verify`` the main build made from the working tree.

    Raises:
        BuildError: no pin, a pin git cannot read, or the build failed.
    """
    start = time.monotonic()
    repo = repo_root(crate_dir)
    pin = read_pin(repo)
    src = _extract(repo, root, pin, log)
    binary, how = _binary(crate_dir, src, root, main_verify, pin, log)
    base_tag = next((t for t in base.tags), base.id)
    # the tree is part of the keyed text: a re-pin makes a new image that records its tree
    body = (f"FROM {base_tag}\nCOPY verify /usr/local/bin/verify\nUSER 65534:65534\n"
            f'LABEL proofdiff.verifier-tree="{pin.tree}"\n'
            'ENTRYPOINT ["/usr/local/bin/verify"]\n')
    key = image_key(base.id, body, {"verify": binary})
    tag = f"{VERIFIER_REPO}:{key[:12]}"
    image = find_image(client, tag)
    action: Literal["built", "reused"] = "reused"
    if image is None:
        with locked(root, "verifier-image", "verifier", STEP_TIMEOUT_S):
            image = find_image(client, tag) or _build(client, root, body, binary, tag, key, pin)
            action = "built"
    pv = PinnedVerifier(tag=tag, image_id=str(image.id), tree=pin.tree, binary=binary, how=how)
    return pv, StepReport("verifier", action, time.monotonic() - start,
                          f"{tag} from tree {pin.tree[:12]} ({how})")


def _build(client: Any, root: Path, body: str, binary: Path, tag: str, key: str,
           pin: Pin) -> Any:
    import docker.errors

    ctx = scratch_dir(root, "verifier-image-")
    try:
        shutil.copy2(binary, ctx / "verify")
        (ctx / "verify").chmod(0o755)
        labels = {"proofdiff.content-key": key, "proofdiff.verifier-commit": pin.commit,
                  "org.opencontainers.image.title": "verifier"}
        (ctx / "Dockerfile").write_text(
            body + "LABEL " + " ".join(f'{k}="{v}"' for k, v in labels.items()) + "\n")
        try:
            image, _ = client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True,
                                           pull=False, timeout=int(STEP_TIMEOUT_S))
        except (docker.errors.DockerException, OSError) as exc:
            raise BuildError("verifier", f"docker build of {tag} failed: {exc}",
                             "check the engine (`docker info`) and the base image") from exc
        return image
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def write_pin(repo: Path, source: str = "targets/refprover") -> Pin:
    """Pin the verifier to ``HEAD:<source>`` (the committed tree, not the working tree).

    Raises:
        BuildError: git cannot resolve it.
    """
    tree, commit = (_git(repo, "rev-parse", f"HEAD:{source}"), _git(repo, "rev-parse", "HEAD"))
    if tree.returncode or commit.returncode:
        raise BuildError("verifier", f"git cannot resolve HEAD:{source}: "
                         f"{(tree.stderr or commit.stderr).decode(errors='replace').strip()}",
                         f"commit {source} first")
    t, c = tree.stdout.decode().strip(), commit.stdout.decode().strip()
    (repo / PIN_FILE).write_text(
        "# The pinned verifier: the git tree of the refprover source whose `verify` judges every\n"
        "# proof (harness/artifacts/pinned_verifier.py). A candidate image never brings its own verifier.\n"
        "# Change it on purpose only: `proofdiff build --pin-verifier`.\n"
        f'source = "{source}"\ntree = "{t}"\ncommit = "{c}"\n', encoding="utf-8")
    return read_pin(repo)

