"""``/docs``: the JSON API's page (Swagger UI, written by FastAPI from the app's OpenAPI schema),
with its script, styles and icon served by this server, so that it renders without a network.

FastAPI's own ``/docs`` loads Swagger UI from a CDN, and is blank offline. The files come from the
``fastapi-offline`` package (a dependency of the ui extra), which ships Swagger UI 5: the version
that reads the OpenAPI 3.1 documents FastAPI writes (``swagger-ui-bundle``, the other package of
these files, ships Swagger UI 4, which refuses them). Only its files are used; the page is FastAPI's.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).parent / "static"
#: where the files are served
ASSETS_URL = "/docs-assets"


def serve_docs(app: FastAPI) -> None:
    """``/docs`` and its files (the app is made with ``docs_url=None, redoc_url=None``)."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} · API",
                                   swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
                                   # no badge asking an online validator about the schema
                                   swagger_ui_parameters={"validatorUrl": None})
