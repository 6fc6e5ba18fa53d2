"""x25519_handshake.py reproduces the X25519 handshake of the field report
on hybrid ML-KEM (its Python benchmark), with Debian's `cryptography`: a
server thread and a client socket on 127.0.0.1, 4-byte length-prefixed
messages, a socket wrapper that sleeps the one-way delay before every send
(the report's DelayedSocket), X25519 then HKDF-SHA256 to a 32-byte session
key, which both sides must agree on. It prints, as JSON, the milliseconds
from the client's first byte to its final key for every run, and the bytes
on the wire. (The report's ML-KEM and ML-DSA modes need liboqs, which
Debian does not package; they are not reproduced here.)

Usage: python3 x25519_handshake.py DELAY_MS RUNS
"""
import json
import socket
import struct
import sys
import threading
import time

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


class DelayedSocket:
    def __init__(self, sock, delay):
        self.sock, self.delay, self.sent = sock, delay, 0

    def send_msg(self, data):
        if self.delay:
            time.sleep(self.delay)
        msg = struct.pack(">I", len(data)) + data
        self.sock.sendall(msg)
        self.sent += len(msg)

    def recv_msg(self):
        (n,) = struct.unpack(">I", self._exact(4))
        return self._exact(n)

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf


def derive(priv, peer):
    shared = priv.exchange(X25519PublicKey.from_public_bytes(peer))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"pqc-bench").derive(shared)


def raw(pub):
    return pub.public_bytes(Encoding.Raw, PublicFormat.Raw)


def serve(listener, delay, runs, keys):
    for _ in range(runs):
        conn, _ = listener.accept()
        s = DelayedSocket(conn, delay)
        client_pub = s.recv_msg()
        priv = X25519PrivateKey.generate()
        s.send_msg(raw(priv.public_key()))
        keys.append(derive(priv, client_pub))
        conn.close()


def main():
    delay, runs = float(sys.argv[1]) / 1000, int(sys.argv[2])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server_keys = []
    t = threading.Thread(target=serve, args=(listener, delay, runs + 1, server_keys))
    t.start()
    ms, wire = [], 0
    for i in range(runs + 1):  # run 0 warms up
        sock = socket.create_connection(listener.getsockname())
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s = DelayedSocket(sock, delay)
        start = time.perf_counter()
        priv = X25519PrivateKey.generate()
        s.send_msg(raw(priv.public_key()))
        key = derive(priv, s.recv_msg())
        elapsed = (time.perf_counter() - start) * 1000
        sock.close()
        wire = s.sent + 36
        if i > 0:
            ms.append(elapsed)
        while len(server_keys) <= i:
            time.sleep(0.0001)
        if server_keys[i] != key:
            sys.exit("the two sides derived different keys")
    t.join()
    print(json.dumps({"delay_ms": delay * 1000, "ms": ms, "wire_bytes": wire}))


main()
