import { withWriteToken } from '../../../lambda/state/exactly-once-writes';

/** How a write carries its token: on the item, and in a condition it alone cannot meet twice. */
describe('a write with its token', () => {
  it('a PutItem stores the token and keeps its own condition, joined with "not this write"', () => {
    const put = withWriteToken(
      'PutItem',
      { TableName: 't', Item: { pk: { S: 'a' } }, ConditionExpression: 'attribute_not_exists(pk)' },
      'tok',
    );
    expect(put.Item).toEqual({ pk: { S: 'a' }, writeToken: { S: 'tok' } });
    expect(put.ConditionExpression).toBe(
      '(attribute_not_exists(pk)) AND (attribute_not_exists(#gatewayWriteToken) OR #gatewayWriteToken <> :gatewayWriteToken)',
    );
    expect(put.ExpressionAttributeNames).toEqual({ '#gatewayWriteToken': 'writeToken' });
    expect(put.ExpressionAttributeValues).toEqual({ ':gatewayWriteToken': { S: 'tok' } });
  });

  it('an UpdateItem joins its SET clause, keeping its names and values', () => {
    const update = withWriteToken(
      'UpdateItem',
      {
        TableName: 't',
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'ADD #n :d SET expiresAt = :ttl REMOVE x',
        ExpressionAttributeNames: { '#n': 'count' },
        ExpressionAttributeValues: { ':d': { N: '1' }, ':ttl': { N: '9' } },
      },
      'tok',
    );
    expect(update.UpdateExpression).toBe(
      'ADD #n :d SET #gatewayWriteToken = :gatewayWriteToken, expiresAt = :ttl REMOVE x',
    );
    expect(update.ExpressionAttributeNames).toEqual({ '#n': 'count', '#gatewayWriteToken': 'writeToken' });
    expect(update.ExpressionAttributeValues).toMatchObject({ ':d': { N: '1' }, ':gatewayWriteToken': { S: 'tok' } });
    // Unconditional before: now it cannot apply twice either.
    expect(update.ConditionExpression).toBe(
      '(attribute_not_exists(#gatewayWriteToken) OR #gatewayWriteToken <> :gatewayWriteToken)',
    );
  });

  it('an UpdateItem without a SET clause gets one', () => {
    const update = withWriteToken(
      'UpdateItem',
      { TableName: 't', Key: { pk: { S: 'a' } }, UpdateExpression: 'REMOVE claim' },
      'tok',
    );
    expect(update.UpdateExpression).toBe('REMOVE claim SET #gatewayWriteToken = :gatewayWriteToken');
  });
});
