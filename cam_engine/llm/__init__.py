"""LLM-driven tasks (summarize, select, answer), their offline extractive versions, and
chat backends (OpenAI-compatible endpoints, local transformers models)."""

from cam_engine.llm.base import (
    Answerer,
    ChatModel,
    Completion,
    Message,
    Selector,
    Summarizer,
    SummaryResult,
    Usage,
)
from cam_engine.llm.extractive import ExtractiveAnswerer, ExtractiveSelector, ExtractiveSummarizer
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import Prompt, load_prompt
from cam_engine.llm.summarizer import ChatSummarizer
from cam_engine.llm.tasks import ChatAnswerer, ChatSelector

__all__ = [
    "Answerer",
    "ChatAnswerer",
    "ChatModel",
    "ChatSelector",
    "ChatSummarizer",
    "Completion",
    "ExtractiveAnswerer",
    "ExtractiveSelector",
    "ExtractiveSummarizer",
    "Message",
    "OpenAICompatibleChat",
    "Prompt",
    "Selector",
    "Summarizer",
    "SummaryResult",
    "Usage",
    "load_prompt",
]
