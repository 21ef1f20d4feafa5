"""The local web apps: judging (people judge pairs) and exploration (slice and group the
importance sample). Both are Starlette apps made with :mod:`abcde.web.server` (one error
shape) and served by uvicorn through :mod:`abcde.web.transport` (one Host check, one CSP, one
set of limits); their pages are files: ``templates/*.html``
(Jinja2) and ``static/*`` beside this module, and the helpers every page shares in
``abcde/assets/common.js`` and ``common.css``."""
