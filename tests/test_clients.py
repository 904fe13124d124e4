"""The client libraries people put in front of an OpenAI-compatible server, with their defaults, against a real
`nanollmserve serve` of the default model: `instructor` in its JSON_SCHEMA and TOOLS modes, LangChain's
`with_structured_output` by JSON schema and by function calling, and `bind_tools`. Each gets a parsed object back.
(The demo model is small: the values are its guesses; the shapes are the point.)

Sampled at the server's default temperature (1.0), as these clients leave it. Two defaults of chapter 13 make that
work on a model this small: compact whitespace, and numbers of at most 16 digits (without the bound, the demo model
ran on inside an integer until the context was full). Forced tool calls ask for one call
(`parallel_tool_calls=False`): allowed any number, the demo model keeps adding calls until the context is full in
about 6% of requests."""
import sys

import pytest
from pydantic import BaseModel

instructor = pytest.importorskip('instructor')
langchain_openai = pytest.importorskip('langchain_openai')


class Person(BaseModel):
    name: str
    age: int


ASK = 'Extract the person: Ada Lovelace, 36 years old.'


@pytest.fixture(scope='module')
def base_url():
    from nanollmserve.lab.bench import ServerProcess, free_port
    port = free_port()
    with ServerProcess([sys.executable, '-m', 'nanollmserve.cli', 'serve', '--port', str(port),
                        '--log-level', 'warning'], port, timeout=300) as url:
        yield url + '/v1'


@pytest.mark.parametrize('mode', ['JSON_SCHEMA', 'TOOLS'])
def test_instructor(base_url, mode):
    from openai import OpenAI
    client = instructor.from_openai(OpenAI(base_url=base_url, api_key='unused'), mode=getattr(instructor.Mode, mode))
    for _ in range(3):          # sampled at the server's default temperature: three different answers, each parsed
        person = client.chat.completions.create(model='nanollmserve-demo', response_model=Person,
                                                messages=[{'role': 'user', 'content': ASK}])
        assert isinstance(person, Person)


@pytest.mark.parametrize('method', ['json_schema', 'function_calling'])
def test_langchain_structured_output(base_url, method):
    llm = langchain_openai.ChatOpenAI(base_url=base_url, api_key='unused', model='nanollmserve-demo')
    for _ in range(3):
        assert isinstance(llm.with_structured_output(Person, method=method).invoke(ASK), Person)


def test_langchain_bind_tools(base_url):
    "With `tool_choice` left to the model, a reply is text or valid calls; asked for calls, they come, parsed."
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        "The current weather in a city."
        return 'sunny'

    llm = langchain_openai.ChatOpenAI(base_url=base_url, api_key='unused', model='nanollmserve-demo')
    free = llm.bind_tools([get_weather]).invoke('What is the weather in Paris?')
    assert all(c['name'] == 'get_weather' and isinstance(c['args'].get('city'), str) for c in free.tool_calls)
    assert free.tool_calls or free.content
    forced = llm.bind_tools([get_weather], tool_choice='any', parallel_tool_calls=False)
    forced = forced.invoke('What is the weather in Paris?')
    assert len(forced.tool_calls) == 1 and not forced.invalid_tool_calls
    assert all(c['name'] == 'get_weather' and isinstance(c['args']['city'], str) for c in forced.tool_calls)
