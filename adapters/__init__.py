"""Views of other reading agents over the same memory store (installed as
``cam_engine.adapters``): ReadAgent pages and gists, MemAgent memory states and GAM
page-stores. They use only the public ``Memory`` API and the store's view verbs."""
