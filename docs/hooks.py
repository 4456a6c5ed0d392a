"""mkdocs hooks: the site's generated pages, made from the code as the site is built."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from redjury import docs


def on_files(files: Files, config: Any) -> Files:
    for path, make in docs.GENERATED_PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return docs.fill_markers(markdown, page.file.src_uri)
