"""Speak NCCL's RAS client protocol as ncclras does (src/ras/client.cc: CLIENT PROTOCOL, TIMEOUT, SET FORMAT, the
command, then read to EOF), for the commands the built 2.31.0 client has no option for (2.32's DIAGNOSTICS)."""
import socket
import sys

cmd, port = sys.argv[1], int(sys.argv[2])
fmt = sys.argv[3] if len(sys.argv) > 3 else None
s = socket.create_connection(("127.0.0.1", port), timeout=60)


def ask(text):
    s.sendall(text.encode())
    got = b""
    while not got.endswith(b"\n"):
        b = s.recv(1)
        if not b:
            break
        got += b
    sys.stderr.write(f"> {text.strip()}\n< {got.decode(errors='replace')}")


ask("CLIENT PROTOCOL 2\n")
ask("TIMEOUT 5\n")
if fmt:
    ask(f"SET FORMAT {fmt}\n")
s.sendall((cmd + "\n").encode())
while True:
    b = s.recv(65536)
    if not b:
        break
    sys.stdout.write(b.decode(errors="replace"))
    sys.stdout.flush()
