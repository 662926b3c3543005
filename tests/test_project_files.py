"""Project files and the YAML users write (issue 41, point 1): a path is a regular file inside the project after every
symlink is resolved, bounded and read once; a glob takes only such files and says in one line what it left out; YAML
is read with bounded alias expansion, no recursive alias and no tag beyond the core schema. Each hostile input ends
in one line naming the file and why, quickly, and builds nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.node_manifests import ManifestError, read_node_manifests
from constructs_lib.karpenter.specs.files import MAX_PROJECT_FILE_BYTES, read_project_file
from tests.test_node_manifests import CLASS, POOL

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("aws_secret_access_key = ...\n")
    return root


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda root: os.symlink(root.parent / "secret.txt", root / "f"),
            "'f' resolves to a file outside the project folder (a symlink): project files stay in the repository, "
            "whose review shows them",
        ),
        (lambda root: os.mkfifo(root / "f"), "'f' is not a regular file (a FIFO, socket or device): name a file"),
        (lambda root: (root / "f").mkdir(), "'f' is a directory: name a file"),
        (
            lambda root: (root / "f").write_bytes(b"x" * (MAX_PROJECT_FILE_BYTES + 1)),
            "'f' is larger than 1024 KiB, the most a project file may be",
        ),
        (lambda root: (root / "f").write_bytes(b"\xff\xfe"), "'f': cannot read it (not UTF-8 text)"),
        (lambda root: os.symlink("f", root / "f"), "'f': cannot resolve it (a symlink loop)"),
        (lambda root: None, "'f': no such file (paths are relative to the project folder)"),
    ],
    ids=["symlink outside", "fifo", "directory", "too large", "not utf-8", "symlink loop", "missing"],
)
def test_a_project_file_is_a_regular_file_inside_the_project(project: Path, make, message):
    make(project)
    started = time.monotonic()
    with pytest.raises(ValueError) as info:
        read_project_file("f", project)
    assert str(info.value) == message
    assert time.monotonic() - started < 1  # a FIFO does not hang the read


def test_a_symlink_inside_the_project_is_read(project: Path):
    (project / "real.yaml").write_text("a: 1\n")
    os.symlink("real.yaml", project / "link.yaml")
    assert read_project_file("link.yaml", project) == "a: 1\n"


def test_a_glob_takes_only_regular_files_inside_the_project_and_says_what_it_left_out(project: Path):
    (project / "karpenter").mkdir()
    (project / "karpenter" / "class.yaml").write_text(CLASS)
    (project / "karpenter" / "pool.yaml").write_text(POOL)
    os.symlink(project.parent / "secret.txt", project / "karpenter" / "secret.yaml")
    os.mkfifo(project / "karpenter" / "pipe.yaml")
    files = read_node_manifests(["karpenter/*.yaml"], cluster_name="c", root=project)
    assert [o.name for o in files.objects] == ["default", "gpu"]
    assert files.notes == (
        "nodeManifests: 'karpenter/*.yaml': took 2 files; 2 left out: symlinks outside the project or not regular files",
    )


def test_a_wide_glob_over_files_of_other_kinds_is_one_line(project: Path):
    """`**/*.yaml` over a repository: the CI workflow, a chart, a kustomization... one line, not one per file."""
    for i in range(40):
        (project / f"other-{i:02}.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    (project / "class.yaml").write_text(CLASS)
    files = read_node_manifests(["**/*.yaml"], cluster_name="c", root=project)
    assert [o.name for o in files.objects] == ["default"]
    assert files.notes == (
        "nodeManifests: '**/*.yaml': 40 of its files hold no EC2NodeClass, NodePool or NodeOverlay (e.g. "
        "other-00.yaml) and are left out",
    )
    (project / "class.yaml").unlink()
    with pytest.raises(ManifestError) as info:
        read_node_manifests(["**/*.yaml"], cluster_name="c", root=project)
    assert str(info.value) == (
        "nodeManifests: '**/*.yaml': 40 of its files hold no EC2NodeClass, NodePool or NodeOverlay (e.g. "
        "other-00.yaml): name the files of your node objects, or a narrower glob"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            BOMB,
            "line 6, column 4: not valid YAML (its aliases expand it to more than 100,000 nodes (an alias bomb))",
        ),
        (
            "a: &a [x, *a]\n",
            "line 1, column 4: not valid YAML (an alias refers to a node it is inside of (a recursive alias))",
        ),
        (
            "a: !!binary aGVsbG8=\n",
            "line 1, column 4: not valid YAML (tag 'tag:yaml.org,2002:binary' is not YAML's core schema (JSON's types))",
        ),
        (
            "a: !!set {x: null}\n",
            "line 1, column 4: not valid YAML (tag 'tag:yaml.org,2002:set' is not YAML's core schema (JSON's types))",
        ),
        (
            "a: !!python/object:os.system x\n",
            "line 1, column 4: not valid YAML (tag 'tag:yaml.org,2002:python/object:os.system' is not YAML's core schema (JSON's types))",
        ),
        ("a: 1\na: 2\n", "line 2, column 1: not valid YAML (key 'a' is given twice in one mapping)"),
    ],
    ids=["alias bomb", "recursive alias", "binary", "set", "python tag", "key twice"],
)
def test_yaml_users_write_is_bounded_and_core_schema_only(text: str, message: str):
    started = time.monotonic()
    with pytest.raises(ValueError) as info:
        yaml_load.user_documents(text)
    assert str(info.value) == message
    assert time.monotonic() - started < 1  # the bomb is refused before it is expanded


def test_the_valid_neighbours_still_read():
    # a date stays a string (no timestamp type), a merge key and shared aliases within the bound are fine
    assert yaml_load.user_documents("d: 2026-11-27\nbase: &b {x: 1}\nm: {<<: *b, y: 2}\nl: [*b, *b]\n") == [
        {"d": "2026-11-27", "base": {"x": 1}, "m": {"x": 1, "y": 2}, "l": [{"x": 1}, {"x": 1}]}
    ]


def test_an_alias_bomb_in_a_file_is_one_line_naming_the_file(project: Path):
    (project / "bomb.yaml").write_text(BOMB)
    with pytest.raises(ManifestError) as info:
        read_node_manifests(["bomb.yaml"], cluster_name="c", root=project)
    assert str(info.value) == (
        "bomb.yaml: line 6, column 4: not valid YAML (its aliases expand it to more than 100,000 nodes (an alias bomb))"
    )
