"""Content keys of proofdiff.artifacts: a changed input changes the key, anything else leaves it equal.

Fast tier: no Docker, no cargo; fake crates in tmp_path.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from proofdiff.artifacts import BuildError
from proofdiff.artifacts.refprover_image import dockerfile_body
from proofdiff.artifacts.content_keys import (
    RootfsRecipe,
    circuit_params_key,
    digest,
    image_key,
    params_set_key,
    paths_digest,
    rootfs_key,
    tool_sources,
    workload_key,
)
from proofdiff.artifacts.base_image import base_tag
from proofdiff.artifacts.sealed_workloads import WORKLOADS, resolve

SEAL_ARGS = WORKLOADS["wpost-2k"].seal_args


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    """A fake refprover crate with the files the keys look at, and some they must ignore."""
    files = {
        "Cargo.toml": '[package]\nname = "refprover"\nversion = "0.1.0"\n',
        "Cargo.lock": "# lock v1\n",
        "src/lib.rs": "pub mod params; pub mod wpost; pub mod server;\n",
        "src/params.rs": "// params v1\n",
        "src/wpost.rs": "// wpost v1\n",
        "src/server.rs": "// server v1\n",
        "src/bin/paramgen.rs": "fn main() {}\n",
        "src/bin/seal.rs": "fn main() {}\n",
        "src/bin/refprover.rs": "fn main() {}\n",
        "README.md": "docs\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _edit(crate: Path, rel: str, text: str = "// changed\n") -> None:
    path = crate / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_digest_is_framed() -> None:
    assert digest("ab", "c") != digest("a", "bc")
    # sha256 over 8-byte big-endian lengths and the parts: 0..01 'a' 0..01 'b'
    assert digest("a", "b") == "3c9d591045bc8876f9d0399bbfb05c6a412096e906f73278f98406cd5dca86df"
    assert digest(b"x") == digest("x")


def test_rootfs_key_changes_with_each_recipe_field() -> None:
    recipe = RootfsRecipe()
    # the key of today's recipe: the base image is rebuilt exactly when this changes
    assert rootfs_key(recipe) == "1ab398e46cff7c29a038596c183cb45b6bc561bcbe73cbcd36daea5eeacd59af"
    changed = [
        replace(recipe, suite="trixie"),
        replace(recipe, variant="buildd"),
        replace(recipe, mirror="http://ftp.de.debian.org/debian"),
        replace(recipe, arch="arm64"),
        replace(recipe, script_version=recipe.script_version + 1),
    ]
    keys = {rootfs_key(r) for r in changed}
    assert len(keys) == len(changed)
    assert rootfs_key(recipe) not in keys


def test_base_tag_is_pinned() -> None:
    # Changing this rebuilds every base and refprover image: bump script_version on purpose.
    assert base_tag(RootfsRecipe()) == "proofdiff/base:bookworm-1ab398e46cff"


def _bins(tmp_path: Path, payload: dict[str, bytes]) -> dict[str, Path]:
    out = {}
    for name, data in payload.items():
        path = tmp_path / "bins" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out[name] = path
    return out


def test_image_key_follows_binaries_base_and_dockerfile(tmp_path: Path) -> None:
    payload = {"refprover": b"r1", "paramgen": b"p1", "seal": b"s1", "verify": b"v1"}
    bins = _bins(tmp_path, payload)
    body = dockerfile_body("proofdiff/base:bookworm-x", bins)
    key = image_key("sha256:base", body, bins)
    assert key == image_key("sha256:base", body, dict(reversed(list(bins.items()))))

    moved = tmp_path / "elsewhere" / "seal"
    moved.parent.mkdir()
    moved.write_bytes(b"s1")
    assert image_key("sha256:base", body, {**bins, "seal": moved}) == key  # bytes, not paths

    bins["verify"].write_bytes(b"v2")
    assert image_key("sha256:base", body, bins) != key
    bins["verify"].write_bytes(b"v1")
    assert image_key("sha256:base", body, bins) == key

    assert image_key("sha256:other", body, bins) != key
    assert image_key("sha256:base", body + "ENV X=1\n", bins) != key
    assert image_key("sha256:base", body, {k: v for k, v in bins.items() if k != "seal"}) != key


def test_dockerfile_has_no_syntax_line_and_runs_as_nobody(tmp_path: Path) -> None:
    body = dockerfile_body("proofdiff/base:bookworm-x", _bins(tmp_path, {"refprover": b"r"}))
    assert body.startswith("FROM proofdiff/base:bookworm-x\n")
    assert "# syntax" not in body and "RUN " not in body
    assert "USER 65534:65534" in body and 'ENTRYPOINT ["/usr/local/bin/refprover"]' in body


WPOST_ID = "proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f"


def test_params_key_follows_cargo_lock_and_the_cache_id(crate: Path) -> None:
    key = circuit_params_key(crate, "wpost-2k", WPOST_ID)
    assert circuit_params_key(crate, "wpost-2k", WPOST_ID) == key
    assert circuit_params_key(crate, "wpost-2k", WPOST_ID + "0") != key
    assert circuit_params_key(crate, "porep-2k", WPOST_ID) != key
    _edit(crate, "Cargo.lock", (crate / "Cargo.lock").read_text() + "# edit\n")
    assert circuit_params_key(crate, "wpost-2k", WPOST_ID) != key


@pytest.mark.parametrize(
    "rel", ["src/server.rs", "src/bin/seal.rs", "src/bin/paramgen.rs", "src/params.rs", "Cargo.toml"]
)
def test_params_key_ignores_refactors(crate: Path, rel: str) -> None:
    """Only the circuit (its cache id) and the crate versions decide the params."""
    key = circuit_params_key(crate, "wpost-2k", WPOST_ID)
    _edit(crate, rel)
    assert circuit_params_key(crate, "wpost-2k", WPOST_ID) == key


def test_bin_path_from_manifest_is_a_source(crate: Path) -> None:
    _edit(
        crate,
        "Cargo.toml",
        '[package]\nname = "refprover"\nversion = "0.1.0"\n\n'
        '[[bin]]\nname = "paramgen"\npath = "tools/paramgen.rs"\n',
    )
    _edit(crate, "tools/paramgen.rs", "fn main() {}\n")
    assert "tools/paramgen.rs" in tool_sources(crate, "paramgen")


def test_params_set_key_is_order_independent() -> None:
    a = params_set_key({"wpost-2k": "k1", "porep-2k": "k2"})
    assert a == params_set_key({"porep-2k": "k2", "wpost-2k": "k1"})
    assert a != params_set_key({"wpost-2k": "k1"})
    assert a != params_set_key({"wpost-2k": "k1", "porep-2k": "k3"})


@pytest.mark.parametrize("rel", ["Cargo.lock", "src/bin/seal.rs", "src/wpost.rs"])
def test_workload_key_changes_with_its_inputs(crate: Path, rel: str) -> None:
    key = workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key")
    _edit(crate, rel)
    assert workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key") != key


def test_workload_key_changes_with_args_name_and_params(crate: Path) -> None:
    key = workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key")
    assert workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key") == key
    other_args = tuple(a if a != "4" else "8" for a in SEAL_ARGS)
    assert workload_key(crate, "wpost-2k", other_args, "params-key") != key
    assert workload_key(crate, "wpost-2k-b", SEAL_ARGS, "params-key") != key
    assert workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key-2") != key
    _edit(crate, "src/server.rs")
    _edit(crate, "src/bin/paramgen.rs")  # reaches the workload only through the params key
    assert workload_key(crate, "wpost-2k", SEAL_ARGS, "params-key") == key


def test_paths_digest_records_absent_and_ignores_order(tmp_path: Path) -> None:
    empty = paths_digest(tmp_path, ["a.rs", "b.rs"])
    assert paths_digest(tmp_path, ["b.rs", "a.rs"]) == empty
    (tmp_path / "a.rs").write_text("")
    assert paths_digest(tmp_path, ["a.rs", "b.rs"]) != empty  # an empty file is not an absent one


def test_unknown_workload_lists_the_known_ones() -> None:
    with pytest.raises(BuildError) as info:
        resolve(["wpost-2k", "nope-32g"])
    assert info.value.step == "workloads"
    assert "nope-32g" in info.value.cause and "wpost-2k" in info.value.fix
    assert [s.name for s in resolve(["wpost-2k", "wpost-2k"])] == ["wpost-2k"]


def test_seeding_the_verifier_target_never_copies_a_folder_into_itself(tmp_path: Path) -> None:
    """The pinned verifier's cargo target is seeded from the main one; a target inside the
    folder copied would be copied into itself until the disk is full."""
    from proofdiff.artifacts.build_errors import BuildError
    from proofdiff.artifacts.pinned_verifier import seed_target

    main = tmp_path / "cargo-target"
    (main / "release").mkdir(parents=True)
    (main / "release" / "verify").write_bytes(b"bin")
    with pytest.raises(BuildError, match="copy it into itself"):
        seed_target(tmp_path, tmp_path / "verifier-target", lambda _l: None)
    seed_target(main, tmp_path / "verifier-target", lambda _l: None)
    assert (tmp_path / "verifier-target" / "release" / "verify").read_bytes() == b"bin"
