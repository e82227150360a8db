"""MkDocs hooks for the docs site (mkdocs.yml's ``hooks:``; scripts/docs_build builds it).

The pages link to files of the repository outside docs/ by relative paths (``../README.md``,
``../bench/results/...``), which work on GitHub and in a checkout; MkDocs knows only docs/ and
would warn about each. Here README.md becomes the site's home page (index.md, its links into docs/
made relative to it), every other file of the repository that a page links to outside docs/ is
copied into the site under repo/ (Markdown files rendered as pages), and the links are pointed at
those. A link whose target does not exist is left as written, so MkDocs warns about it and
``mkdocs build --strict`` fails, inside docs/ or outside. The API page's Sphinx roles in
docstrings (``:func:`plan```) are shown as their code alone."""

import os
import posixpath
import re

from mkdocs.structure.files import File, InclusionLevel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# [text](target) and ![alt](target): groups (opening, target, the rest: an anchor, a title, ")").
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s#]+)((?:#[^)\s]*)?(?:\s+\"[^\"]*\")?\))")
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
ROLE = re.compile(r":(?:func|meth|class|attr|mod|data|obj|exc):(?=<code>)")


def _repo_path(src_uri):
    """The repository path of a site page or file."""
    if src_uri == "index.md":
        return "README.md"
    if src_uri.startswith("repo/"):
        return src_uri[len("repo/"):]
    return "docs/" + src_uri


def _site_uri(repo_path):
    """Where a repository file lives in the site."""
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith("docs/"):
        return repo_path[len("docs/"):]
    return "repo/" + repo_path


def _targets(repo_path, text):
    """(link as written, repository path it points to) of the relative links outside code blocks."""
    prose = FENCE.sub("", text)
    for m in LINK.finditer(prose):
        link = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I) or link.startswith("/"):
            continue
        yield link, posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), link))


def _is_file(repo_path):
    return not repo_path.startswith("../") and os.path.isfile(os.path.join(ROOT, repo_path))


def on_files(files, config):
    """Adds README.md as index.md and the files outside docs/ that pages link to (following links
    of the Markdown ones added)."""
    todo = ["README.md"] + ["docs/" + f.src_uri for f in files.documentation_pages()]
    seen = set(todo)
    while todo:
        repo_path = todo.pop()
        if not repo_path.startswith("docs/"):
            uri = _site_uri(repo_path)
            if files.get_file_from_path(uri) is None:
                inclusion = InclusionLevel.UNDEFINED if uri == "index.md" else InclusionLevel.NOT_IN_NAV
                files.append(File.generated(config, uri, abs_src_path=os.path.join(ROOT, repo_path),
                                            inclusion=inclusion))
        if not repo_path.endswith(".md"):
            continue
        with open(os.path.join(ROOT, repo_path), encoding="utf-8") as f:
            text = f.read()
        for _, target in _targets(repo_path, text):
            if target not in seen and not target.startswith("docs/") and _is_file(target):
                seen.add(target)
                todo.append(target)
    return files


def on_page_markdown(markdown, page, config, files):
    """Points the links of a page at the site's copies of their targets."""
    repo_path = _repo_path(page.file.src_uri)
    here = posixpath.dirname(page.file.src_uri)

    def rewrite(m):
        link = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.I) or link.startswith("/"):
            return m.group(0)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), link))
        if not _is_file(target):
            return m.group(0)  # as written: MkDocs warns about it
        new = posixpath.relpath(_site_uri(target), here or ".")
        return m.group(1) + new + m.group(3)

    parts = re.split(r"(^```.*?^```[^\n]*$)", markdown, flags=re.M | re.S)
    return "".join(p if i % 2 else LINK.sub(rewrite, p) for i, p in enumerate(parts))


def on_page_content(html, page, config, files):
    """Drops the Sphinx role in front of a docstring's ``:func:`name``` (shown as its code)."""
    return ROLE.sub("", html)
