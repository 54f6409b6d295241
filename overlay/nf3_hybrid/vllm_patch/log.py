"""Loggers under vLLM's ``vllm`` namespace, so overlay messages go through vLLM's own
handler, format and level (VLLM_LOGGING_LEVEL) in every process."""
from vllm.logger import init_logger


def get_logger(module_name: str):
    return init_logger(f"vllm.{module_name}")
