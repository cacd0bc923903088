"""A null pointer read through ctypes: a real SIGSEGV in native code."""
import ctypes

ctypes.string_at(0)
