"""The book's Sphinx extensions, listed in ``_config.yml`` (``extra_extensions``)."""
