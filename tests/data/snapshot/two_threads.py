"""Source of pyspy-two-threads.json: a main thread and a helper thread, both asleep."""

import threading
import time


def worker() -> None:
    time.sleep(100)


def main() -> None:
    threading.Thread(target=worker, name="helper", daemon=True).start()
    time.sleep(100)


main()
