"""Kafka protocol primitive encoders, straight from the protocol guide (shared by the golden-bytes
tests)."""

import struct


def int8(v):
    return struct.pack(">b", v)


def int16(v):
    return struct.pack(">h", v)


def int32(v):
    return struct.pack(">i", v)


def float64(v):
    return struct.pack(">d", v)


def boolean(v):
    return b"\x01" if v else b"\x00"


def uvarint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])
