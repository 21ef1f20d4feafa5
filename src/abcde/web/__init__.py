"""The local web apps: judging (people judge pairs) and exploration (slice and group the
importance sample). Both are Starlette apps served by uvicorn through :mod:`abcde.web.server`
(one error shape, one Host check, one CSP); their pages are files: ``templates/*.html``
(Jinja2) and ``static/*`` beside this module, and the helpers every page shares in
``abcde/assets/common.js`` and ``common.css``."""
