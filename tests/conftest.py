"""What the tests share: a headless Chromium (the website's test and the server's documentation pages)."""
import shutil

import pytest

INSTALL = 'Install Chromium from Debian: apt-get install -y chromium chromium-driver (and: pip install selenium)'


@pytest.fixture(scope='module')
def browser():
    """One headless Chromium per test module: Debian's chromium and chromedriver, no downloads. It resolves no
    host but `localhost` and 127.0.0.1, so a page that needs the internet (a CDN's script, say) fails here as it would offline."""
    chromium, chromedriver = shutil.which('chromium'), shutil.which('chromedriver')
    if not (chromium and chromedriver): pytest.fail(f'Chromium or chromedriver not found. {INSTALL}')
    try: from selenium import webdriver
    except ImportError: pytest.fail(f'selenium is not installed. {INSTALL}')
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1280,900',
                '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1'):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=chromedriver))
    yield driver
    driver.quit()
