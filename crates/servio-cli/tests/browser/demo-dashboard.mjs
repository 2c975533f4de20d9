// The demo in a real browser: sign in as the demo user, open the dashboard, keep a screenshot.
// Arguments: PLATFORM_URL EMAIL PASSWORD SCREENSHOT_PATH.
// Prints one line per metric card (heading, then its change line) and one per collection log;
// exits non-zero on any failure.
import { launch } from './launch.mjs';

const [platform, email, password, screenshot] = process.argv.slice(2);
const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 1400 } });
  await page.goto(`${platform}/signin`);
  const signin = page.locator('form[action="/signin"]');
  await signin.locator('input[name=email]').fill(email);
  await signin.locator('input[name=password]').fill(password);
  await Promise.all([page.waitForLoadState(), signin.locator('button').click()]);
  await page.goto(`${platform}/dashboard`);
  await page.waitForSelector('svg polyline');
  for (const card of await page.locator('.card').all()) {
    const heading = (await card.locator('h2').first().textContent()).trim();
    const lines = await card.locator('p').allTextContents();
    const change = lines.find((line) => line.includes('against')) || '';
    const charts = await card.locator('svg polyline').count();
    console.log(`${heading} | ${change.trim()} | charts=${charts}`);
  }
  await page.screenshot({ path: screenshot, fullPage: true });
} finally {
  await browser.close();
}
