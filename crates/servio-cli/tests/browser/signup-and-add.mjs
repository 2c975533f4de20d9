// A new user in a real browser: sign up, add the demo site with its token, and keep a
// screenshot of the site page; then list the site in the Directory (claim, put the token where
// the demo site reads it, verify) and find it by search.
// Arguments: PLATFORM_URL DEMO_SITE_URL TOKEN SCREENSHOT_PATH VERIFICATION_FILE.
// Prints the site page's heading and the search hit; exits non-zero on any failure.
import { writeFileSync } from 'node:fs';
import { launch } from './launch.mjs';

const [platform, site, token, screenshot, verificationFile] = process.argv.slice(2);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
  await page.goto(`${platform}/signin`);
  const signup = page.locator('form[action="/signup"]');
  await signup.locator('input[name=email]').fill(`browser-${Date.now()}@example.com`);
  await signup.locator('input[name=password]').fill('a long enough password');
  await signup.locator('select[name=time_zone]').selectOption('Pacific/Auckland');
  await Promise.all([page.waitForURL('**/vault'), signup.locator('button').click()]);

  const add = page.locator('form[action="/vault"]');
  await add.locator('input[name=url]').fill(site);
  await add.locator('input[name=token]').fill(token);
  await Promise.all([page.waitForURL('**/vault/*'), add.locator('button').click()]);

  await page.waitForSelector('text=shop.getSalesSummary');
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(await page.locator('h1').textContent());

  await page.goto(`${platform}/directory`);
  const claim = page.locator('form[action="/directory/claims"]');
  await claim.locator('input[name=url]').fill(site);
  await Promise.all([page.waitForURL('**/directory'), claim.locator('button').click()]);
  const verification = (await page.locator('code', { hasText: 'wmcp_verify_' }).first().textContent()).trim();
  writeFileSync(verificationFile, verification);
  await Promise.all([page.waitForLoadState(), page.locator('form[action$="/verify"] button').first().click()]);
  await page.waitForSelector('text=Verified: the site is listed.');
  await page.goto(`${platform}/directory?q=sales`);
  console.log(await page.locator('.card h2').first().textContent());
  await page.screenshot({ path: screenshot.replace(/\.png$/, '-directory.png'), fullPage: true });
} finally {
  await browser.close();
}
