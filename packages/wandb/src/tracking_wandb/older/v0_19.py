"""W&B 0.19.10 (the floor) to 0.30: where they differ from 0.31, the release line this backend is written against.

Every difference the adapter depends on is answered here for whichever release is installed, by looking
at the SDK (``hasattr``, the ``Settings`` model's fields, importable modules), never at its version
number, so the tracker and its start-up stay version-free:

* ``wandb_setup.singleton()``: newer releases build the process's setup on first use and load its
  settings lazily (``settings_if_loaded``); in 0.19 it is ``None`` until ``wandb.setup()`` or
  ``wandb.init`` ran, and ``wandb_setup._setup(start_service=False)`` loads the settings without
  starting ``wandb-core``.
* Settings fields this backend sets by default (``x_transaction_log_flush_interval`` is not in
  releases before 0.31): a field the installed ``wandb.Settings`` lacks is left out, and :func:`missing_settings`
  names it for one warning and a finish-report note.
* Credentials: ``wandb.sdk.lib.wbauth`` (newer releases) or ``wandb.sdk.lib.apikey`` (0.19) looks
  for a key the way ``wandb.init`` would, without prompting.
* The run metadata message sent after ``init`` (``EnvironmentRecord`` from 0.21, ``MetadataRequest``
  before): detected in :func:`tracking_wandb.run_metadata.generation`.
"""

from __future__ import annotations

from typing import Any

#: What each optional default does, for the note when the installed W&B has no such setting.
SETTING_EFFECTS = {
    "x_transaction_log_flush_interval": (
        "wandb-core writes the run's .wandb file on its own schedule: flush() cannot make the last steps durable"
    ),
}


def setup_object(create: bool) -> Any:
    """W&B's process setup (``_WandbSetup``), or None when there is none yet and ``create`` is False."""
    from wandb.sdk import wandb_setup

    found = wandb_setup.singleton()
    if found is None and create:
        found = wandb_setup._setup(start_service=False)  # as in 0.19: singleton() does not create it
    return found


def is_set_up() -> bool:
    """Whether W&B already read its settings in this process (its variables then no longer matter)."""
    found = setup_object(create=False)
    if found is None:
        return False
    if hasattr(found, "settings_if_loaded"):  # newer releases create the object before loading settings
        return found.settings_if_loaded is not None
    return True  # as in 0.19: the object exists only once its settings are loaded


def global_settings() -> Any:
    """W&B's process settings (environment variables and settings files), loaded without a service."""
    return setup_object(create=True).settings


def has_setting(settings: Any, field: str) -> bool:
    """Whether the installed ``wandb.Settings`` has ``field``."""
    return field in type(settings).model_fields


def missing_settings(settings: Any, fields: Any) -> list[str]:
    """Those of ``fields`` the installed ``wandb.Settings`` does not have."""
    return [field for field in fields if not has_setting(settings, field)]


def setting(settings: Any, field: str, default: Any = None) -> Any:
    """``settings.<field>``, or ``default`` on a release without that field."""
    return getattr(settings, field, default) if has_setting(settings, field) else default


def find_api_key(settings: Any, host: str) -> bool:
    """Whether W&B would find credentials for ``host`` (key, netrc entry, ``wandb login``) without prompting."""
    try:
        from wandb.sdk.lib.wbauth import authenticate
    except ImportError:  # as in 0.19: the key comes from the settings or the netrc file
        from wandb.sdk.lib import apikey

        if settings.api_key or global_settings().api_key:  # WANDB_API_KEY is in the process settings
            return True
        probe = settings.model_copy()
        probe.base_url = host
        return apikey.api_key(settings=probe) is not None
    found = authenticate.authenticate_session(host=host, source="tracking", prompt=False, update_session=False)
    return found is not None


def version() -> str:
    """The installed W&B release, for notes."""
    import wandb

    return str(getattr(wandb, "__version__", "unknown"))
