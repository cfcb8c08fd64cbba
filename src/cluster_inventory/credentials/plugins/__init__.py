"""Exec credential plugins shipped as console scripts.

Each plugin is started once per credential fetch, so it imports only the standard library:
no pydantic, no kubernetes_asyncio, and this package's parents import nothing heavy either.
"""
