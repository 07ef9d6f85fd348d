"""GetStatus over a Unix socket from Python's grpcio (grpc-core), as an
operator's script would call the daemon: with the channel option that
docs/OPERATING.md documents, or without it.

Usage: get_status.py SOCKET with-option|without-option
Exit 0 when the daemon answered, 1 when the call failed (printed either way).
"""
import sys

import grpc

socket_path, mode = sys.argv[1], sys.argv[2]
options = [("grpc.default_authority", "localhost")] if mode == "with-option" else []
with grpc.insecure_channel(f"unix://{socket_path}", options=options) as channel:
    # No generated stubs: GetStatusRequest has no required field, so an
    # empty message is a valid request; the reply is counted, not decoded.
    get_status = channel.unary_unary(
        "/cuzk.v1.ProvingEngine/GetStatus",
        request_serializer=lambda message: message,
        response_deserializer=lambda message: message,
    )
    try:
        reply = get_status(b"", timeout=20)
    except grpc.RpcError as error:
        print(f"python {mode}: GetStatus failed: {error.code().name}: {error.details()}")
        sys.exit(1)
    print(f"python {mode}: GetStatus answered ({len(reply)} bytes)")
