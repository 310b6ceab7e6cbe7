"""read_head against real checkouts made by git: loose refs, packed refs, detached HEAD, worktrees."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tracking_core.kit.gitinfo import read_head

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to make the checkouts")


def git(*args, cwd):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "work", cwd=repo)
    (repo / "train.py").write_text("print('hi')\n")
    git("add", ".", cwd=repo)
    git("commit", "-qm", "first", cwd=repo)
    (repo / "sub").mkdir()
    return repo


def test_a_loose_ref_and_a_packed_one_give_the_commit_git_names(checkout):
    commit = git("rev-parse", "HEAD", cwd=checkout)
    assert read_head(checkout / "sub") == (checkout.resolve(), commit, "work")
    git("pack-refs", "--all", cwd=checkout)
    assert read_head(checkout) == (checkout.resolve(), commit, "work")


def test_a_detached_head_and_a_linked_worktree(checkout, tmp_path):
    commit = git("rev-parse", "HEAD", cwd=checkout)
    git("checkout", "-q", "--detach", cwd=checkout)
    assert read_head(checkout) == (checkout.resolve(), commit, None)
    git("worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"), cwd=checkout)
    assert read_head(tmp_path / "wt") == ((tmp_path / "wt").resolve(), commit, "other")


def test_outside_a_checkout_there_is_no_head(tmp_path):
    assert read_head(tmp_path) is None
