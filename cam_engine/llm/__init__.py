"""LLM-driven tasks (summarize now; select and answer later) and chat backends."""

from cam_engine.llm.base import ChatModel, Completion, Message, Summarizer, SummaryResult, Usage
from cam_engine.llm.extractive import ExtractiveSummarizer
from cam_engine.llm.openai_compat import OpenAICompatibleChat
from cam_engine.llm.prompts import Prompt, load_prompt
from cam_engine.llm.summarizer import ChatSummarizer

__all__ = [
    "ChatModel",
    "ChatSummarizer",
    "Completion",
    "ExtractiveSummarizer",
    "Message",
    "OpenAICompatibleChat",
    "Prompt",
    "Summarizer",
    "SummaryResult",
    "Usage",
    "load_prompt",
]
