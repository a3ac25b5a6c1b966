# A stray process on the network: speaks the store's framing but has no job token.
# Prints the store's reply, or what happened to the connection.
import json
import socket
import struct
import sys

host, port = sys.argv[1], int(sys.argv[2])
msg = json.dumps({"op": "join", "node": "stray-1", "host": "intruder", "slots": 1}).encode()
with socket.create_connection((host, port), timeout=5) as s:
    s.sendall(b"MTR1" + struct.pack(">I", len(msg)) + msg)
    head = s.recv(8)
    if len(head) < 8:
        print("closed without reply")
        sys.exit(0)
    n = struct.unpack(">I", head[4:])[0]
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            break
        body += chunk
    print("reply:", body.decode())
    print("closed after reply" if s.recv(1) == b"" else "still open")
