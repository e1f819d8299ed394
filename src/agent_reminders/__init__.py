"""agent-reminders: typed, lifecycle-managed system reminders for LLM agent loops.

Reminders are queued on a :class:`Transcript`, projected into one envelope per model request,
and appended as a new trailing message that is never edited again — so the serialized request
N+1 always begins with request N and provider prompt caches stay warm.
"""

from ._core.channels import Channel, ChannelSetting, placement
from ._core.commit import Committed, commit_directives
from ._core.envelope import (
    ENVELOPE_INSTRUCTIONS,
    EnvelopeStyle,
    InstructionsMode,
    PrefixBreak,
    check_append_only,
    neutralize_content,
    neutralize_untrusted,
    project,
    render_directive,
    render_envelope,
)
from ._core.errors import (
    AgentRemindersError,
    AlreadyDeliveredError,
    AuditError,
    AuthorityError,
    BridgeConnectionError,
    ConfigError,
    Diagnostic,
    FactError,
    MessageError,
    MissingReminderIdError,
    ModelError,
    ObservationalHookError,
    PropagateError,
    ProviderResultError,
    ProviderSkippedError,
    QueueError,
    QueueErrorReason,
    QueueFullError,
    ReminderError,
    ReminderOptionError,
    ScriptError,
    StateError,
    StoreError,
    UnknownReminderIdError,
    explain,
)
from ._core.events import LIFECYCLE_TOPIC, EventLog, EventRecord, Kind
from ._core.ids import UUID7Factory, new_id
from ._core.lifecycle import (
    Cleared,
    Compacted,
    Injected,
    PostTurn,
    clear_reminders,
    compact,
    handoff_reminders,
    inject_reminder,
    insert_reminder,
    post_turn,
    seed_inherited,
)
from ._core.records import Authority, DeliveryMode, Message, Propagate, Reminder, RoleHint, Source
from ._core.request import (
    Model,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolReceipt,
    ToolResult,
    Usage,
)
from ._core.transcript import Transcript, reminder_event
from ._core.wording import WordingFinding, lint_body, lint_reminder_options
from ._lazy import exports
from ._options import ReminderOptions
from ._version import __version__

# The rest is imported when a name is first read (PEP 562): the core above is what every use
# of the package loads (a coding agent's hook runs a fresh process per event), and its classes
# must carry the package's name (below) before anything can see them.
TYPE_CHECKING = False  # what type checkers take as typing.TYPE_CHECKING, without loading typing
if TYPE_CHECKING:
    from .capabilities import ModelCapabilities, capabilities_for, register_model_capabilities
    from .config import Workspace
    from .hooks import DispatchResult, Hooks
    from .loop import LoopResult, agent_loop
    from .providers import FireResult, ProviderContext, lint_agent_options
    from .queue import InjectionQueue, QueueItem
    from .session import SeamResult, Session, SessionState
else:
    __getattr__, __dir__ = exports(
        __name__,
        {
            ".capabilities": (
                "ModelCapabilities",
                "capabilities_for",
                "register_model_capabilities",
            ),
            ".config": ("Workspace",),
            ".hooks": ("DispatchResult", "Hooks"),
            ".loop": ("LoopResult", "agent_loop"),
            ".providers": ("FireResult", "ProviderContext", "lint_agent_options"),
            ".queue": ("InjectionQueue", "QueueItem"),
            ".session": ("SeamResult", "Session", "SessionState"),
        },
    )

__all__ = [
    "AgentRemindersError",
    "AlreadyDeliveredError",
    "AuditError",
    "Authority",
    "AuthorityError",
    "BridgeConnectionError",
    "Channel",
    "ChannelSetting",
    "Cleared",
    "Committed",
    "Compacted",
    "ConfigError",
    "DeliveryMode",
    "Diagnostic",
    "DispatchResult",
    "ENVELOPE_INSTRUCTIONS",
    "EnvelopeStyle",
    "EventLog",
    "EventRecord",
    "FactError",
    "FireResult",
    "Hooks",
    "Injected",
    "InjectionQueue",
    "InstructionsMode",
    "Kind",
    "LIFECYCLE_TOPIC",
    "LoopResult",
    "Message",
    "MessageError",
    "MissingReminderIdError",
    "Model",
    "ModelCapabilities",
    "ModelError",
    "ModelInfo",
    "ModelRequest",
    "ModelResponse",
    "ObservationalHookError",
    "PostTurn",
    "PrefixBreak",
    "Propagate",
    "PropagateError",
    "ProviderContext",
    "ProviderResultError",
    "ProviderSkippedError",
    "QueueError",
    "QueueErrorReason",
    "QueueFullError",
    "QueueItem",
    "Reminder",
    "ReminderError",
    "ReminderOptionError",
    "ReminderOptions",
    "RoleHint",
    "ScriptError",
    "SeamResult",
    "Session",
    "SessionState",
    "Source",
    "StateError",
    "StoreError",
    "Tool",
    "ToolCall",
    "ToolReceipt",
    "ToolResult",
    "Transcript",
    "UUID7Factory",
    "UnknownReminderIdError",
    "Usage",
    "WordingFinding",
    "Workspace",
    "__version__",
    "agent_loop",
    "capabilities_for",
    "check_append_only",
    "clear_reminders",
    "commit_directives",
    "compact",
    "explain",
    "handoff_reminders",
    "inject_reminder",
    "insert_reminder",
    "lint_agent_options",
    "lint_body",
    "lint_reminder_options",
    "neutralize_content",
    "neutralize_untrusted",
    "new_id",
    "placement",
    "post_turn",
    "project",
    "register_model_capabilities",
    "reminder_event",
    "render_directive",
    "render_envelope",
    "seed_inherited",
]


def _public_module() -> None:
    """Classes defined in private modules (``_core``, ``_options``) report this package as
    their module, so tracebacks, ``repr`` and the docs show the path users import them from.
    Those modules are imported above, not lazily, so that the label is set before anything
    can see the classes."""
    for name in __all__:
        found = globals().get(name)  # a lazy name comes from a public module
        if isinstance(found, type) and found.__module__.startswith(f"{__name__}._"):
            found.__module__ = __name__


_public_module()
del _public_module
