"""The demo's progress on stderr: a rich display on a terminal, plain lines elsewhere."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class Display:
    """Progress on stderr: a rich display on a terminal, plain lines elsewhere (CI, pipes)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        if console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(finished_text="[green]✓"),
                TextColumn("{task.description}"),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            )

    def __enter__(self) -> Display:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def begin(self, title: str, total: int | None) -> TaskID | None:
        if self.progress is not None:
            return self.progress.add_task(title, total=total)
        self.console.print(f"==> {title}", highlight=False)
        return None

    def advance(self, task: TaskID | None, completed: int, note: str) -> None:
        if self.progress is not None and task is not None:
            self.progress.update(task, completed=completed)
        else:
            self.console.print(f"    {note}", highlight=False)

    def end(self, task: TaskID | None, title: str, seconds: float) -> None:
        if self.progress is not None and task is not None:
            total = self.progress.tasks[task].total
            self.progress.update(task, total=total or 1, completed=total or 1)
            self.progress.update(task, description=f"{title} ({seconds:.1f} s)")
        else:
            self.console.print(f"    done in {seconds:.1f} s", highlight=False)
