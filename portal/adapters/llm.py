"""The LLM client: any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, Ollama, vLLM,
llama.cpp server) by base URL, model and key, with a timeout and bounded retries."""

from __future__ import annotations

from typing import Any


class LLMError(RuntimeError):
    """The model could not answer. The message names the failure class, never the prompt."""


class OpenAICompatibleLLM:
    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0, retries: int = 2,
        temperature: float = 0.0, max_tokens: int = 2000,
    ) -> None:
        from openai import OpenAI

        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        # The openai client retries connection errors, 408, 409, 429 and 5xx with backoff.
        self._client = OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=retries)

    def complete(self, system: str, prompt: str) -> str:
        import openai

        try:
            answer: Any = self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except openai.APIStatusError as exc:
            raise LLMError(f"model answered HTTP {exc.status_code}") from None
        except openai.APITimeoutError:
            raise LLMError("model timed out") from None
        except openai.OpenAIError as exc:
            raise LLMError(f"model call failed: {type(exc).__name__}") from None
        try:
            content = answer.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise LLMError("model answer had no message") from None
        return content if isinstance(content, str) else ""

    def close(self) -> None:
        self._client.close()


def build_llm(base_url: str | None, model: str | None, api_key: str | None, timeout: float = 30.0) -> OpenAICompatibleLLM | None:
    """The configured model, or None (consolidation then answers `unavailable`)."""
    if not base_url:
        return None
    if not base_url.startswith(("http://", "https://")):
        raise ValueError("MEMORY_LLM_BASE_URL must start with http:// or https://")
    if not model:
        raise ValueError("MEMORY_LLM_MODEL is required with MEMORY_LLM_BASE_URL")
    return OpenAICompatibleLLM(base_url, model, api_key, timeout=timeout)
