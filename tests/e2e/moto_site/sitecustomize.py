# Loaded by the moto server the e2e tests start (moto.rs puts this directory on PYTHONPATH).
# moto is one Python process, and what limits the load tests; two of its per-request costs
# that change nothing it answers go:
# - werkzeug logs every request to stderr, which the tests only drain (a fifth of moto's CPU
#   under load). The start-up line with the port, which moto.rs reads, is logged elsewhere.
# - moto finds the service of each request by listing its own package directory, twice; the
#   listing cannot change while it runs, so it is taken once.
try:
    import werkzeug.serving

    werkzeug.serving.WSGIRequestHandler.log_request = lambda self, *args, **kwargs: None
except ImportError:
    pass

try:
    import moto.backends

    _MODULES = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: _MODULES
except (ImportError, AttributeError):
    pass
