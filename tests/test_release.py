"""Releases a course can pin: the version in ``pyproject.toml`` is the release, tagged
``v<version>``; the changelog, the citation and the licences agree with it and with the README.

The install cells and Colab links that name the tag are checked in ``tests/test_colab.py``.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab_sync  # noqa: E402 (tools/ is not a package; see sys.path above)

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION = PROJECT["version"]
REPO = colab_sync.load_repository(ROOT / "_config.yml")
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


# ----- the version and its tag ------------------------------------------------------------------


def test_the_version_is_a_plain_release_number_and_the_tag_follows_it() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), "MAJOR.MINOR.PATCH, as the tags are"
    assert REPO.version == VERSION and REPO.tag == f"v{VERSION}"
    assert colab_sync.release_tag(VERSION) == f"v{VERSION}"


# ----- CHANGELOG.md -----------------------------------------------------------------------------


def test_the_changelog_has_a_dated_entry_for_the_current_version_on_top() -> None:
    entries = colab_sync.changelog_entries(CHANGELOG)
    assert entries, "CHANGELOG.md lists no release"
    assert entries[0][0] == VERSION, f"the newest entry is {entries[0][0]}, the version {VERSION}"
    assert colab_sync.release_date(CHANGELOG, VERSION) == entries[0][1]
    assert "Keep a Changelog" in CHANGELOG


def test_every_changelog_entry_is_dated_and_they_run_newest_first() -> None:
    entries = colab_sync.changelog_entries(CHANGELOG)
    versions = [version for version, _ in entries]
    assert {"0.1.0", "0.2.0"} <= set(versions)
    assert versions == sorted(versions, key=_version_key, reverse=True)
    assert len(set(versions)) == len(versions)
    dates = [datetime.date.fromisoformat(str(date)) for _, date in entries]
    assert dates == sorted(dates, reverse=True)


def test_each_changelog_entry_says_what_it_added() -> None:
    bodies = re.split(r"^## \[[^\]]+\].*$", CHANGELOG, flags=re.M)[1:]
    # Every heading but an "## [Unreleased]" one is a release.
    releases = [h for h in re.findall(r"^## \[([^\]]+)\]", CHANGELOG, re.M) if h != "Unreleased"]
    assert len(releases) == len(colab_sync.changelog_entries(CHANGELOG))
    for body in bodies:
        assert re.search(r"^### (Added|Changed|Fixed|Removed|Deprecated|Security)$", body, re.M)
        assert re.search(r"^- \S", body, re.M)


# ----- CITATION.cff -----------------------------------------------------------------------------


def test_the_citation_is_cff_1_2_0_with_its_required_fields() -> None:
    citation = _citation()
    assert citation["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert citation[key], key
    assert all(isinstance(author, dict) and author.get("name") for author in citation["authors"])
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert citation["title"] == config["title"]
    assert config["author"] in [author["name"] for author in citation["authors"]]
    # Every key is one CFF 1.2.0 defines at the top level (a typo would be ignored by readers).
    known = {
        "abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi",
        "identifiers", "keywords", "license", "license-url", "message", "preferred-citation",
        "references", "repository", "repository-artifact", "repository-code", "title", "type",
        "url", "version",
    }  # fmt: skip
    assert set(citation) <= known, set(citation) - known


def test_the_citation_names_this_release_its_date_and_the_repository() -> None:
    citation = _citation()
    assert citation["version"] == VERSION
    # Quoted in the file, as CFF's schema wants a string (an unquoted date is a YAML date).
    assert citation["date-released"] == colab_sync.release_date(CHANGELOG, VERSION)
    datetime.date.fromisoformat(citation["date-released"])
    assert citation["repository-code"] == REPO.url
    assert citation["url"] == REPO.book_url


def test_the_citation_names_both_licences() -> None:
    assert _citation()["license"] == ["MIT", "CC-BY-4.0"]


# ----- the licences -----------------------------------------------------------------------------


def test_the_code_is_mit_and_the_prose_and_figures_cc_by_4_0() -> None:
    code = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert code.startswith("MIT License")
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    content = (ROOT / "LICENSE-CONTENT").read_text(encoding="utf-8")
    assert "Creative Commons Attribution 4.0 International Public License" in content
    assert "Section 1 -- Definitions." in content and "Section 8 -- Interpretation." in content
    assert content.rstrip().endswith("Creative Commons may be contacted at creativecommons.org.")
    head = content.split("Attribution 4.0 International\n", 1)[0]
    assert "prose and figures" in head and "MIT" in head and "LICENSE" in head


def test_the_readme_says_which_licence_covers_what() -> None:
    section = README.split("## Licence", 1)[1].split("\n## ", 1)[0]
    for name in ("`LICENSE`", "`LICENSE-CONTENT`", "MIT", "CC BY 4.0", "prose", "figures"):
        assert name in section, name
    for name in ("CHANGELOG.md", "CITATION.cff"):
        assert name in README, name


def test_the_readme_explains_the_pinned_releases() -> None:
    section = README.split("## Releases", 1)[1].split("\n## ", 1)[0]
    for phrase in ("v<version>", "pyproject.toml", "CHANGELOG.md", "make colab-sync", "release"):
        assert phrase in section, phrase
    assert "does not exist yet" in section  # the tag is made after the version reaches main


# ----- the release workflow ---------------------------------------------------------------------


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_ci_tags_a_new_version_on_main_after_the_tests_pass() -> None:
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}  # only the release job may write
    release = workflow["jobs"]["release"]
    assert release["needs"] == "test"
    assert release["permissions"] == {"contents": "write"}
    assert "refs/heads/main" in release["if"] and "push" in release["if"]
    script = "\n".join(step.get("run", "") for step in release["steps"])
    assert 'git tag --annotate "$TAG"' in script and 'git push origin "refs/tags/$TAG"' in script
    assert "git ls-remote --exit-code --tags origin" in script  # an existing tag is left alone
    assert "gh release create" in script
    # colab-test sees the tags, so it installs a released version as Colab's readers get it.
    checkout = workflow["jobs"]["test"]["steps"][0]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0


def test_the_release_job_reads_the_tag_repository_and_notes_as_this_project_has_them(
    tmp_path: Path,
) -> None:
    """The job's own script, run on copies of pyproject.toml, _config.yml and CHANGELOG.md."""
    [step] = [s for s in _workflow()["jobs"]["release"]["steps"] if s.get("id") == "release"]
    script = re.search(r"<<'EOF'\n(.*?)^EOF$", step["run"], re.S | re.M)[1]
    for name in ("pyproject.toml", "_config.yml", "CHANGELOG.md"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    output = tmp_path / "github-output"
    env = {**os.environ, "GITHUB_OUTPUT": str(output)}
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, check=True)
    values = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").split())
    assert values == {"tag": f"v{VERSION}", "repository": f"{REPO.owner}/{REPO.name}"}
    notes = (tmp_path / "release-notes.md").read_text(encoding="utf-8")
    entry = CHANGELOG.split(f"## [{VERSION}]", 1)[1].split("\n## [", 1)[0]
    assert entry.split("\n", 1)[1].strip() in notes
    assert REPO.requirement() in notes
