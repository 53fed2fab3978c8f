"""The Celery binding of Lunora Jobs: ``celery -A workers worker`` (≡ ``lunora worker``) finds ``app`` here.

See ``workers.celery_app`` (app + reliability config), ``workers.tasks`` (turn / tool / sweep /
dispatch-due), ``workers.beat`` (schedule) and ``workers.dispatch`` (``CeleryDispatcher``).
"""

from workers.celery_app import app

celery = app
"""Alias: Celery's ``-A workers`` looks for ``app`` or ``celery``."""

__all__ = ["app", "celery"]
