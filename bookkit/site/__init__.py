"""The built site's companions: Chromium driven by Playwright (``browser``) and the
vendored JavaScript the site serves itself (``vendor``)."""
