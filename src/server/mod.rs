//! The HTTP service (issue 4). For now only the router with /healthz.
